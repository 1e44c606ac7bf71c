// `localRateLimit` with `type: tokens` (issue 13 item 1; SPEC §8.1, BEHAVIOUR.md §8.1): the bucket counts LLM tokens.
// The prompt estimate is reserved before the call, the real usage (streams included) is charged after the answer,
// and once the bucket is empty the next request gets 429 in the client API's error shape without reaching the
// provider. Driven by the real `openai` and `@anthropic-ai/sdk` clients against aimock; a "hello" answer costs
// 11 + 5 = 16 tokens (harness FIXTURES).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { aiRoute, rejection, sdkClients, startAiGateway, startMock } from './harness.ts';
import type { AiGateway, Mock } from './harness.ts';

const tokens = (maxTokens: number, fillInterval = '1h') => ({ localRateLimit: [{ maxTokens, tokensPerFill: maxTokens, fillInterval, type: 'tokens' }] });

describe('localRateLimit type: tokens on an ai route', () => {
  let mock: Mock;
  let gw: AiGateway;

  before(async () => {
    mock = await startMock();
    const ai = (name: string) => ({ name, provider: { openAI: {} }, hostOverride: mock.hostPort });
    gw = await startAiGateway([
      aiRoute('/drain', ai('drain'), tokens(32)),
      aiRoute('/refill', ai('refill'), tokens(16, '400ms')),
      aiRoute('/stream', ai('stream'), tokens(16)),
      aiRoute('/both', ai('both'), { localRateLimit: [{ maxTokens: 100, tokensPerFill: 100, fillInterval: '1h' }, { maxTokens: 16, tokensPerFill: 16, fillInterval: '1h', type: 'tokens' }] }),
      aiRoute('/an', { name: 'an', provider: { anthropic: {} }, hostOverride: mock.hostPort }, { ...tokens(16), testAi: { routes: { '/v1/messages': 'messages' } } }),
      aiRoute('/cjk', ai('cjk'), tokens(1000)),
      aiRoute('/optout', ai('optout'), tokens(1000)),
      aiRoute('/cjkan', { name: 'cjkan', provider: { anthropic: {} }, hostOverride: mock.hostPort }, { ...tokens(1000), testAi: { routes: { '/v1/messages': 'messages' } } }),
    ]);
  });
  after(async () => {
    await gw?.stop();
    await mock?.stop();
  });

  const { openai } = sdkClients(() => gw.base, 'sk-test');
  const hello = (c: OpenAI) => c.chat.completions.create({ model: 'gpt-test', messages: [{ role: 'user', content: 'hello' }] }).withResponse();
  const upstreamCalls = async () => (await mock.journal()).length;

  it('charges the real usage after each answer; the request after the bucket is drained gets 429 and never reaches the provider', async () => {
    const first = await hello(openai('/drain'));
    assert.deepEqual(first.data.usage, { prompt_tokens: 11, completion_tokens: 5, total_tokens: 16 });
    assert.equal(first.response.headers.get('x-ratelimit-limit'), '32');
    // "hello" is 5 characters: an estimate of 2 tokens is reserved before the call; the headers leave before usage is known.
    assert.equal(first.response.headers.get('x-ratelimit-remaining'), '30');
    assert.ok(Number(first.response.headers.get('x-ratelimit-reset')) > 3000);

    const second = await hello(openai('/drain'));
    assert.equal(second.response.headers.get('x-ratelimit-remaining'), '14', '32 - 16 charged for the first answer - 2 reserved');

    const calls = await upstreamCalls();
    const err = await rejection(hello(openai('/drain')), OpenAI.RateLimitError);
    assert.equal(err.status, 429);
    assert.deepEqual(err.error, { message: 'rate limit exceeded', type: 'rate_limit_error', param: null, code: null }, 'the OpenAI error object');
    assert.equal(err.headers?.get('x-ratelimit-limit'), '32');
    assert.equal(err.headers?.get('x-ratelimit-remaining'), '0');
    assert.ok(Number(err.headers?.get('retry-after')) > 3000, 'Retry-After on the denial (DECIDED 10)');
    assert.equal(await upstreamCalls(), calls, 'the provider did not receive the refused request');
  });

  it('refills after the interval', async () => {
    // Refills fall on interval boundaries counted from the gateway's start; one may land between two requests.
    let refused = false;
    for (let i = 0; i < 4 && !refused; i++) {
      try {
        await hello(openai('/refill'));
      } catch (err) {
        assert.ok(err instanceof OpenAI.RateLimitError);
        refused = true;
      }
    }
    assert.ok(refused, 'a 16-token bucket refuses after 16-token answers');
    await sleep(450);
    const again = await hello(openai('/refill'));
    assert.equal(again.data.choices[0]!.message.content, 'Hello from the mock!');
  });

  it('a streamed answer charges the usage reported in the stream', async () => {
    const stream = await openai('/stream').chat.completions.create({ model: 'gpt-test', stream: true, messages: [{ role: 'user', content: 'hello' }] });
    let usage: unknown;
    for await (const chunk of stream) if (chunk.usage) usage = chunk.usage;
    assert.deepEqual(usage, { prompt_tokens: 11, completion_tokens: 5, total_tokens: 16 });
    const calls = await upstreamCalls();
    await rejection(hello(openai('/stream')), OpenAI.RateLimitError);
    assert.equal(await upstreamCalls(), calls);
  });

  it('a client that turned the usage chunk off gets none, though the limit asked the provider for it and charged it', async () => {
    for (const options of [{ include_usage: false }, {}]) {
      const stream = await openai('/optout').chat.completions.create({ model: 'gpt-test', stream: true, stream_options: options, messages: [{ role: 'user', content: 'hello' }] });
      let text = '';
      for await (const chunk of stream) {
        // OpenAI sends a client that asks for none no chunk without choices (code reading `choices[0]` relies on it).
        assert.equal(chunk.usage ?? undefined, undefined, JSON.stringify(chunk));
        assert.equal(chunk.choices.length, 1, JSON.stringify(chunk));
        text += chunk.choices[0]!.delta.content ?? '';
      }
      assert.equal(text, 'Hello from the mock!');
    }
    const next = await hello(openai('/optout'));
    assert.equal(next.response.headers.get('x-ratelimit-remaining'), String(1000 - 16 - 16 - 2), 'both streams charged their usage');
  });

  it('reserves a CJK prompt by its UTF-8 bytes / 4 (3 bytes a character), OpenAI and Anthropic clients', async () => {
    // 400 CJK characters: 1,200 UTF-8 bytes, which tokenizers split into several hundred tokens (ADR 0164).
    const prompt = '\u6f22'.repeat(400);
    const chat = await openai('/cjk').chat.completions.create({ model: 'gpt-test', messages: [{ role: 'user', content: prompt }] }).withResponse();
    assert.equal(chat.response.headers.get('x-ratelimit-remaining'), '700', '300 tokens reserved, not 100');
    // An Anthropic client, its system prompt counted too.
    const anthropic = new Anthropic({ baseURL: `${gw.base}/cjkan`, apiKey: 'sk-test', maxRetries: 0 });
    const msg = await anthropic.messages.create({ model: 'claude-test', max_tokens: 16, system: 'Be brief.', messages: [{ role: 'user', content: prompt }] }).withResponse();
    assert.equal(msg.response.headers.get('x-ratelimit-remaining'), String(1000 - Math.ceil((1200 + 9) / 4)));
  });

  it('a request bucket and a token bucket on one route: the token bucket refuses', async () => {
    await hello(openai('/both'));
    const err = await rejection(hello(openai('/both')), OpenAI.RateLimitError);
    assert.equal(err.headers?.get('x-ratelimit-limit'), '16', 'the headers of the bucket that refused');
  });

  it('Anthropic client: RateLimitError in Anthropic\'s error envelope', async () => {
    const client = new Anthropic({ baseURL: `${gw.base}/an`, apiKey: 'sk-test', maxRetries: 0 });
    const msg = () => client.messages.create({ model: 'claude-test-1', max_tokens: 10, messages: [{ role: 'user', content: 'hello' }] });
    const ok = await msg();
    assert.equal(ok.usage.input_tokens, 11);
    const err = await rejection(msg(), Anthropic.RateLimitError);
    assert.equal(err.status, 429);
    assert.deepEqual(err.error, { type: 'error', error: { type: 'rate_limit_error', message: 'rate limit exceeded' } });
  });

  it('type: tokens on a route without an ai backend is a config error naming the problem', async () => {
    const yaml = (policies: string, backend = 'backends: [{ host: "127.0.0.1:1" }]') =>
      `binds:\n- port: ${gw.port}\n  listeners:\n  - routes:\n    - name: plain\n      policies:\n${policies}\n      ${backend}\n`;
    await assert.rejects(
      gw.gateway.compile(yaml('        localRateLimit:\n        - maxTokens: 10\n          tokensPerFill: 10\n          fillInterval: 1m\n          type: tokens')),
      /:11:17: `type: tokens` counts LLM tokens.*`ai` backend.*localRateLimit\[0\]\.type/s,
    );
    await assert.rejects(
      gw.gateway.compile(yaml('        directResponse: { status: 200 }\n        localRateLimit: [{ maxTokens: 10, tokensPerFill: 10, fillInterval: 1m, type: tokens }]', '')),
      /`type: tokens` counts LLM tokens/,
      'a route without backends',
    );
  });
});
