// What a stream cut before the provider reported its usage is charged (ADR 0150): the output already relayed is
// estimated (UTF-8 bytes / 4, the prompt estimator's rule; ADR 0157, 0164), never below what the provider reported, and the prompt by
// its estimate when the provider reported none. The same counts reach a virtual key's budgets, a token bucket, the cost
// metrics and the access log (marked estimated). Real gateway and `openai` client aborting mid-stream; aimock as a
// slow OpenAI provider (usage only in its last chunk) and a slow Anthropic one (0 output tokens until its end); the
// client leaving and the route deadline; traced or not.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import OpenAI from 'openai';
import { scrape, value } from '../helpers/metrics.ts';
import { startRoutesGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';
import { accessRecords, aiPreset, aiRoute, startMock } from './harness.ts';
import type { AiGateway, Mock } from './harness.ts';

const KEY_O = 'sk-cut-openai-0123456789';
const KEY_A = 'sk-cut-anthro-0123456789';
const KEY_D = 'sk-cut-deadline-0123456789';
/** 12,000 characters: 3,000 tokens by the estimator; streamed 40 characters every 10 ms (about 3 s). */
const ANSWER = 'word '.repeat(2400);
const FULL_OUTPUT = 3000;
/** The client leaves once it has read this many characters: 1,000 tokens or more were relayed. */
const READ = 4000;

// Traced, the call's span listens for the abort too: the charge must be the same.
for (const traced of [false, true]) describe(`a stream cut before its usage${traced ? ', traced' : ''}`, () => {
  let mock: Mock;
  let gw: AiGateway;
  let base: string;

  before(async () => {
    // The Anthropic answer reports its input at its start, its output (as Anthropic does) only at its end.
    mock = await startMock([
      { match: { userMessage: 'tell me a long story' }, response: { content: ANSWER, usage: { prompt_tokens: 9, completion_tokens: FULL_OUTPUT } }, latency: 10, chunkSize: 40 },
      { match: { userMessage: 'tell me a long tale' }, response: { content: ANSWER, usage: { input_tokens: 9 } }, latency: 10, chunkSize: 40 },
      { match: {}, response: { content: 'ok' } },
    ]);
    const virtualKeys = {
      store: { sqlite: { path: ':memory:' } },
      keys: [
        { id: 'ko', key: KEY_O, budgets: [{ tokens: 1_000_000, period: 'day' }, { usd: 100, period: 'day' }] },
        { id: 'ka', key: KEY_A, budgets: [{ tokens: 1_000_000, period: 'day' }, { usd: 100, period: 'day' }] },
        { id: 'kd', key: KEY_D, budgets: [{ tokens: 1_000_000, period: 'day' }, { usd: 100, period: 'day' }] },
      ],
    };
    const oa = (name: string) => ({ name, provider: { openAI: {} }, hostOverride: mock.hostPort });
    const an = { name: 'an', provider: { anthropic: {} }, hostOverride: mock.hostPort };
    // Spans go to a port nobody listens on: only the call's span matters here.
    const tracing = traced ? { tracing: { otlpEndpoint: `http://127.0.0.1:${await freePort()}`, otlpProtocol: 'http', randomSampling: true } } : {};
    gw = await startRoutesGateway([
      aiRoute('/o', oa('o'), { virtualKeys }),
      aiRoute('/a', an, { virtualKeys }),
      aiRoute('/d', oa('d'), { virtualKeys, timeout: { requestTimeout: '800ms' } }),
      aiRoute('/l', oa('l'), { localRateLimit: [{ maxTokens: 100_000, tokensPerFill: 100_000, fillInterval: '1h', type: 'tokens' }] }),
    ], { config: { logging: { format: 'json', level: 'info' }, drainTimeout: '200ms', ...tracing }, preset: aiPreset });
    base = gw.base;
  });
  after(async () => {
    await gw?.stop();
    await mock?.stop();
  });

  /** Streams the long answer and leaves after READ characters; the characters read. */
  const readAndLeave = async (prefix: string, apiKey: string, model: string, content = 'tell me a long story'): Promise<number> => {
    const client = new OpenAI({ baseURL: `${base}${prefix}/v1`, apiKey, maxRetries: 0 });
    const stream = await client.chat.completions.create({ model, stream: true, messages: [{ role: 'user', content }] });
    let read = 0;
    for await (const c of stream) {
      read += c.choices[0]?.delta?.content?.length ?? 0;
      if (read >= READ) break;
    }
    return read;
  };
  const used = async (id: string): Promise<{ tokens: number; usd: number }> => {
    const body = (await (await fetch(`${gw.adminUrl}/keys/${id}/usage`)).json()) as { usage: Record<string, unknown>[] };
    return { tokens: Number(body.usage[0]!.used), usd: Number(body.usage[1]!.used) };
  };
  /** Settlement follows the access log by a moment: wait for the tokens to move. */
  const settled = async (id: string): Promise<{ tokens: number; usd: number }> => {
    const until = Date.now() + 5000;
    for (;;) {
      const u = await used(id);
      if (u.tokens > 0 || Date.now() > until) return u;
      await sleep(20);
    }
  };

  it('OpenAI provider, no usage reported: the relayed output and the prompt estimate are charged, on the key, the log and the cost metric', async () => {
    const read = await readAndLeave('/o', KEY_O, 'gpt-4o');
    const [rec] = await accessRecords(gw, '/o/v1/chat/completions');
    const out = Number(rec!['llm.outputTokens']);
    assert.ok(out >= Math.ceil(read / 4) && out < FULL_OUTPUT, `llm.outputTokens ${out}: at least the ${read} characters read / 4, less than the whole answer`);
    assert.equal(rec!['llm.outputTokensEstimated'], true);
    assert.equal(rec!['llm.inputTokens'], 5, "the prompt's estimate: 20 ASCII bytes / 4");
    assert.equal(rec!['llm.inputTokensEstimated'], true);
    const cost = Number(rec!['llm.cost']);
    // gpt-4o in the built-in catalog: 2.5 / 10 USD per 1M tokens.
    assert.ok(Math.abs(cost - (5 * 2.5 + out * 10) / 1e6) < 1e-12, `llm.cost ${cost}`);
    const u = await settled('ko');
    assert.equal(u.tokens, 5 + out, 'the key is charged what the log says, not the 256-token output estimate');
    assert.ok(Math.abs(u.usd - cost) < 1e-12, `usd ${u.usd}`);
    const m = await scrape(gw);
    assert.ok(Math.abs((value(m, 'switchyard_llm_cost_usd_total', { provider: 'openai', model: 'gpt-4o' }) ?? 0) - cost) < 1e-12);
    assert.ok(Math.abs((value(m, 'switchyard_virtual_key_cost_usd_total', { key: 'ko' }) ?? 0) - cost) < 1e-12);
    assert.equal(value(m, 'switchyard_llm_tokens_total', { provider: 'openai', model: 'gpt-4o', type: 'output' }), out);
  });

  it('Anthropic provider (0 output tokens until the end), translated: the relayed output is charged, not 0', async () => {
    const read = await readAndLeave('/a', KEY_A, 'claude-sonnet-4-5', 'tell me a long tale');
    const [rec] = await accessRecords(gw, '/a/v1/chat/completions');
    const out = Number(rec!['llm.outputTokens']);
    assert.ok(out >= Math.ceil(read / 4) && out < FULL_OUTPUT, `llm.outputTokens ${out}`);
    assert.equal(rec!['llm.outputTokensEstimated'], true);
    assert.equal(rec!['llm.inputTokens'], 9, 'the input the provider reported stands');
    assert.equal(rec!['llm.inputTokensEstimated'], undefined);
    const u = await settled('ka');
    assert.equal(u.tokens, 9 + out);
    assert.ok(u.usd > 0 && Math.abs(u.usd - Number(rec!['llm.cost'])) < 1e-12);
  });

  it('a token bucket is charged the same estimate', async () => {
    const read = await readAndLeave('/l', 'sk-any', 'gpt-4o');
    const [rec] = await accessRecords(gw, '/l/v1/chat/completions');
    const charged = Number(rec!['llm.inputTokens']) + Number(rec!['llm.outputTokens']);
    assert.ok(charged >= 5 + Math.ceil(read / 4));
    await sleep(50);
    // The next request's header counts the cut call's charge and its own prompt estimate (1).
    const client = new OpenAI({ baseURL: `${base}/l/v1`, apiKey: 'sk-any', maxRetries: 0 });
    const { response } = await client.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] }).withResponse();
    const remaining = Number(response.headers.get('x-ratelimit-remaining'));
    assert.equal(remaining, 100_000 - charged - 1, `remaining ${remaining}`);
  });

  it("the route's deadline cuts the stream: charged what it relayed too", async () => {
    const client = new OpenAI({ baseURL: `${base}/d/v1`, apiKey: KEY_D, maxRetries: 0 });
    const stream = await client.chat.completions.create({ model: 'gpt-4o', stream: true, messages: [{ role: 'user', content: 'tell me a long story' }] });
    let read = 0;
    await assert.rejects(async () => {
      for await (const c of stream) read += c.choices[0]?.delta?.content?.length ?? 0;
    });
    assert.ok(read > 1024, `read ${read}`);
    const [rec] = await accessRecords(gw, '/d/v1/chat/completions');
    const out = Number(rec!['llm.outputTokens']);
    assert.ok(out >= Math.ceil(read / 4) && out < FULL_OUTPUT, `llm.outputTokens ${out}`);
    assert.equal(rec!['llm.outputTokensEstimated'], true);
    assert.equal((await settled('kd')).tokens, 5 + out);
  });

  it("the estimate is at most what the request allows: its max_tokens (times n)", async () => {
    const client = new OpenAI({ baseURL: `${base}/l/v1`, apiKey: 'sk-any', maxRetries: 0 });
    const stream = await client.chat.completions.create({ model: 'gpt-4o', max_tokens: 400, stream: true, messages: [{ role: 'user', content: 'tell me a long story' }] });
    let read = 0;
    for await (const c of stream) {
      read += c.choices[0]?.delta?.content?.length ?? 0;
      if (read >= READ) break;
    }
    const recs = await accessRecords(gw, '/l/v1/chat/completions', 3);
    assert.equal(recs[2]!['llm.outputTokens'], 400, `read ${read} characters, more than 400 tokens' worth (this provider ignores max_tokens)`);
  });
});

describe('a cut stream counts what the tokenizer sees: function-call arguments and UTF-8 bytes', () => {
  const ARGS = { path: 'notes.txt', content: 'x'.repeat(400) };
  /** 400 characters of CJK text: 1,200 UTF-8 bytes, which tokenizers split into far more than 400 / 4 tokens. */
  const CJK = '语'.repeat(400);
  let upstream: TestUpstream;
  let gw: AiGateway;

  before(async () => {
    // Gemini streams whole function calls (`args` an object) and, here, no usage until its end, which never comes.
    upstream = await startUpstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const event = (parts: unknown[]): string => `data: ${JSON.stringify({ candidates: [{ content: { role: 'model', parts }, index: 0 }], modelVersion: 'gemini-2.5-flash' })}\r\n\r\n`;
      res.write(event([{ functionCall: { name: 'write_file', args: ARGS } }]));
      res.write(event([{ text: CJK }]));
    });
    gw = await startRoutesGateway([
      aiRoute('/g', { name: 'g', provider: { gemini: {} }, hostOverride: `127.0.0.1:${upstream.port}` }, { testAi: { routes: { ':streamGenerateContent': 'generateContent' } } }),
    ], { config: { logging: { format: 'json', level: 'info' }, drainTimeout: '200ms' }, preset: aiPreset });
  });
  after(async () => {
    await gw?.stop();
    await upstream?.close();
  });

  it("a Gemini client that leaves is charged the arguments' JSON and the text's UTF-8 bytes, / 4", async () => {
    const aborter = new AbortController();
    const res = await fetch(`${gw.base}/g/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-goog-api-key': 'AIzaKey' },
      body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'write it' }] }] }),
      signal: aborter.signal,
    });
    const reader = res.body!.getReader();
    let text = '';
    while (!text.includes(CJK)) text += new TextDecoder().decode((await reader.read()).value);
    aborter.abort();
    const [rec] = await accessRecords(gw, '/g/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse');
    const bytes = Buffer.byteLength(JSON.stringify(ARGS)) + Buffer.byteLength(CJK);
    assert.equal(rec!['llm.outputTokens'], Math.ceil(bytes / 4));
    assert.equal(rec!['llm.outputTokensEstimated'], true);
  });
});
