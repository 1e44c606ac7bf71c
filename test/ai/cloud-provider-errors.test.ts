// Errors of the Gemini and Bedrock providers as their clients see them: Google's retry hint (`google.rpc.RetryInfo`
// in the error body; Gemini sends no Retry-After) becomes `Retry-After` for the client's SDK and for failover's
// cooldown; a route listing Bedrock and Gemini `ai` backends moves on from one's 429/5xx to the other; Gemini's
// safety blocks (a blocked prompt, a SAFETY stop) are each client's content filter.
// Loopback stand-ins answer as the providers do (aimock sends no retry hints).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';
import { aiRoute, rejection, startAiGateway, startMock } from './harness.ts';
import type { AiGateway, Mock } from './harness.ts';
import { frame } from './stream-fixtures.ts';

/** Gemini's quota error: 429 RESOURCE_EXHAUSTED with QuotaFailure and RetryInfo details, no Retry-After header. */
const quotaError = (delay: string): string =>
  JSON.stringify({
    error: {
      code: 429,
      message: 'You exceeded your current quota.',
      status: 'RESOURCE_EXHAUSTED',
      details: [
        { '@type': 'type.googleapis.com/google.rpc.QuotaFailure', violations: [{ quotaMetric: 'generativelanguage.googleapis.com/generate_content_free_tier_requests' }] },
        { '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: delay },
      ],
    },
  });

const NATIVE = { testAi: { routes: { ':generateContent': 'generateContent', ':streamGenerateContent': 'generateContent', '/v1/messages': 'messages', '*': 'completions' } } };
const AWS = { backendAuth: { aws: { accessKeyId: 'AKID', secretAccessKey: 'secret', region: 'us-east-1', serviceName: 'bedrock' } } };
const FIRST = 1_000_000_000;

describe("Google's retry hint becomes Retry-After", () => {
  let gemini: TestUpstream;
  let gw: AiGateway;
  let delay = '37s';

  before(async () => {
    gemini = await startUpstream((_req, res) => {
      res.writeHead(429, { 'content-type': 'application/json' });
      res.end(quotaError(delay));
    });
    const hp = `127.0.0.1:${gemini.port}`;
    gw = await startAiGateway([
      aiRoute('/gem', { name: 'gem', provider: { gemini: { model: 'gemini-2.5-flash' } }, hostOverride: hp }, NATIVE),
      aiRoute('/vx', { name: 'vx', provider: { vertex: { projectId: 'p', model: 'gemini-2.5-flash' } }, hostOverride: hp }, { ...NATIVE, backendAuth: { key: 'ya29.token' } }),
    ]);
  });
  after(async () => {
    await gw?.stop();
    await gemini?.close();
  });

  it('an OpenAI client: RateLimitError with retry-after, streamed or not', async () => {
    const openai = new OpenAI({ baseURL: `${gw.base}/gem/v1`, apiKey: 'AIzaKey', maxRetries: 0 });
    for (const stream of [false, true]) {
      const err = await rejection(openai.chat.completions.create({ model: 'm', stream, messages: [{ role: 'user', content: 'hi' }] }), OpenAI.RateLimitError);
      assert.equal(err.headers.get('retry-after'), '37');
      assert.equal((err.error as { message: string }).message, 'You exceeded your current quota.');
    }
  });

  it('an Anthropic client on Vertex: RateLimitError with retry-after (a fraction of a second rounds up)', async () => {
    delay = '1.250s';
    try {
      const anthropic = new Anthropic({ baseURL: `${gw.base}/vx`, apiKey: 'k', maxRetries: 0 });
      const err = await rejection(anthropic.messages.create({ model: 'm', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] }), Anthropic.RateLimitError);
      assert.equal(err.headers.get('retry-after'), '2');
      assert.deepEqual(err.error, { type: 'error', error: { type: 'rate_limit_error', message: 'You exceeded your current quota.' } }, "Anthropic's error type, not Google's status");
    } finally {
      delay = '37s';
    }
  });

  it("a Gemini client: Google's error body unchanged, with retry-after", async () => {
    const res = await fetch(`${gw.base}/gem/v1beta/models/gemini-2.5-flash:generateContent`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-goog-api-key': 'AIzaKey' },
      body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'hi' }] }] }),
    });
    assert.equal(res.status, 429);
    assert.equal(res.headers.get('retry-after'), '37');
    assert.equal(await res.text(), quotaError('37s'));
  });
});

describe('failover between Bedrock and Gemini backends', () => {
  let mock: Mock;
  let throttled: TestUpstream;
  let quota: TestUpstream;
  let bedrock: TestUpstream;
  let gw: AiGateway;

  before(async () => {
    mock = await startMock();
    // Bedrock's throttling answer: 429, the exception named in x-amzn-ErrorType, no Retry-After.
    throttled = await startUpstream((_req, res) => {
      res.writeHead(429, { 'content-type': 'application/json', 'x-amzn-errortype': 'ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/' });
      res.end(JSON.stringify({ message: 'Too many requests, please wait before trying again.' }));
    });
    quota = await startUpstream((_req, res) => {
      res.writeHead(429, { 'content-type': 'application/json' });
      res.end(quotaError('1s'));
    });
    bedrock = await startUpstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/vnd.amazon.eventstream' });
      res.end(
        Buffer.concat([
          frame('messageStart', { role: 'assistant' }),
          frame('contentBlockDelta', { contentBlockIndex: 0, delta: { text: 'from bedrock' } }),
          frame('contentBlockStop', { contentBlockIndex: 0 }),
          frame('messageStop', { stopReason: 'end_turn' }),
          frame('metadata', { usage: { inputTokens: 3, outputTokens: 2, totalTokens: 5 }, metrics: { latencyMs: 1 } }),
        ]),
      );
    });
    const route = (name: string, backends: unknown[], policies?: Record<string, unknown>) => ({ name, matches: [{ path: { pathPrefix: `/${name}` } }], backends, ...(policies ? { policies } : {}) });
    gw = await startAiGateway([
      route('br2gem', [
        { ai: { name: 'bedrock-busy', provider: { bedrock: { region: 'us-east-1', model: 'amazon.nova-lite-v1:0' } }, hostOverride: `127.0.0.1:${throttled.port}` }, weight: FIRST, policies: AWS },
        { ai: { name: 'gemini-ok', provider: { gemini: { model: 'gemini-2.5-flash' } }, hostOverride: mock.hostPort } },
      ]),
      route('bronly', [{ ai: { name: 'bedrock-only', provider: { bedrock: { region: 'us-east-1', model: 'amazon.nova-lite-v1:0' } }, hostOverride: `127.0.0.1:${throttled.port}` }, policies: { ...AWS, testAi: { routes: { '/v1/messages': 'messages', '*': 'completions' } } } }]),
      route('gem2br', [
        { ai: { name: 'gemini-quota', provider: { gemini: { model: 'gemini-2.5-flash' } }, hostOverride: `127.0.0.1:${quota.port}` }, weight: FIRST },
        { ai: { name: 'bedrock-ok', provider: { bedrock: { region: 'us-east-1', model: 'amazon.nova-lite-v1:0' } }, hostOverride: `127.0.0.1:${bedrock.port}` }, policies: AWS },
      ]),
    ]);
  });
  after(async () => {
    await gw?.stop();
    await throttled?.close();
    await quota?.close();
    await bedrock?.close();
    await mock?.stop();
  });

  const client = (prefix: string): OpenAI => new OpenAI({ baseURL: `${gw.base}/${prefix}/v1`, apiKey: 'AIzaKey', maxRetries: 0 });

  it("a Bedrock 429 (ThrottlingException) moves the request to Gemini", async () => {
    const res = await client('br2gem').chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hello' }] });
    assert.equal(res.choices[0]!.message.content, 'Hello from the mock!');
    assert.equal(throttled.received.length, 1);
    assert.match((await mock.last()).path, /gemini-2\.5-flash:generateContent$/);
  });

  it("a Bedrock ThrottlingException reaches an Anthropic client as rate_limit_error, an OpenAI client with its name", async () => {
    const anthropic = new Anthropic({ baseURL: `${gw.base}/bronly`, apiKey: 'k', maxRetries: 0 });
    const err = await rejection(anthropic.messages.create({ model: 'm', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] }), Anthropic.RateLimitError);
    assert.deepEqual(err.error, { type: 'error', error: { type: 'rate_limit_error', message: 'Too many requests, please wait before trying again.' } });
    const oerr = await rejection(client('bronly').chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }), OpenAI.RateLimitError);
    assert.equal((oerr.error as { type: string }).type, 'ThrottlingException');
  });

  it("a Gemini 429 moves a stream to Bedrock; Gemini is skipped for its retry hint's time, then tried again", async () => {
    const read = async (): Promise<string> => {
      let text = '';
      for await (const c of await client('gem2br').chat.completions.create({ model: 'm', stream: true, messages: [{ role: 'user', content: 'hello' }] })) text += c.choices[0]?.delta.content ?? '';
      return text;
    };
    assert.equal(await read(), 'from bedrock');
    assert.equal(quota.received.length, 1);
    assert.equal(await read(), 'from bedrock');
    assert.equal(quota.received.length, 1, 'cooling down');
    // The hint said 1 s (the default cooldown without one is 5 s).
    await new Promise((r) => setTimeout(r, 1300));
    assert.equal(await read(), 'from bedrock');
    assert.equal(quota.received.length, 2, 'tried again once its retry hint had passed');
  });
});

describe('Gemini safety blocks reach each client as its content filter', () => {
  let gemini: TestUpstream;
  let gw: AiGateway;
  /** A prompt blocked before any candidate, or an answer stopped by SAFETY after some text. */
  let mode: 'prompt' | 'answer' = 'prompt';

  const blocked = { promptFeedback: { blockReason: 'SAFETY', safetyRatings: [{ category: 'HARM_CATEGORY_DANGEROUS_CONTENT', probability: 'HIGH' }] }, usageMetadata: { promptTokenCount: 7, totalTokenCount: 7 } };
  const partial = { candidates: [{ content: { role: 'model', parts: [{ text: 'Here is how' }] }, index: 0 }], usageMetadata: { promptTokenCount: 7, totalTokenCount: 7 } };
  const stopped = { candidates: [{ content: { role: 'model', parts: [{ text: '' }] }, finishReason: 'SAFETY', index: 0, safetyRatings: [{ category: 'HARM_CATEGORY_DANGEROUS_CONTENT', probability: 'HIGH', blocked: true }] }], usageMetadata: { promptTokenCount: 7, candidatesTokenCount: 3, totalTokenCount: 10 } };

  before(async () => {
    gemini = await startUpstream((req, res) => {
      const events = mode === 'prompt' ? [blocked] : [partial, stopped];
      if (req.url!.includes(':streamGenerateContent')) {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        return void res.end(events.map((e) => `data: ${JSON.stringify(e)}\r\n\r\n`).join(''));
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(mode === 'prompt' ? blocked : { ...stopped, candidates: [{ ...stopped.candidates[0], content: partial.candidates[0]!.content }] }));
    });
    gw = await startAiGateway([aiRoute('/gem', { name: 'gem', provider: { gemini: { model: 'gemini-2.5-flash' } }, hostOverride: `127.0.0.1:${gemini.port}` }, NATIVE)]);
  });
  after(async () => {
    await gw?.stop();
    await gemini?.close();
  });

  for (const which of ['prompt', 'answer'] as const) {
    it(`${which === 'prompt' ? 'a blocked prompt (promptFeedback.blockReason)' : 'an answer stopped by finishReason SAFETY'}: content_filter for OpenAI clients, refusal for Anthropic clients, streamed or not`, async () => {
      mode = which;
      const text = which === 'prompt' ? '' : 'Here is how';
      const openai = new OpenAI({ baseURL: `${gw.base}/gem/v1`, apiKey: 'AIzaKey', maxRetries: 0 });
      const whole = await openai.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] });
      assert.equal(whole.choices[0]!.finish_reason, 'content_filter');
      assert.equal(whole.choices[0]!.message.content, text);
      const streamed = await openai.chat.completions.stream({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }).finalChatCompletion();
      assert.equal(streamed.choices[0]!.finish_reason, 'content_filter');
      assert.equal(streamed.choices[0]!.message.content ?? '', text);
      const anthropic = new Anthropic({ baseURL: `${gw.base}/gem`, apiKey: 'AIzaKey', maxRetries: 0 });
      for (const message of [
        await anthropic.messages.create({ model: 'm', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] }),
        await anthropic.messages.stream({ model: 'm', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] }).finalMessage(),
      ]) {
        assert.equal(message.stop_reason, 'refusal');
        assert.equal(message.content.map((b) => (b.type === 'text' ? b.text : '')).join(''), text);
        assert.equal(message.usage.input_tokens, 7);
      }
    });
  }
});
