// A streamed LLM call cut before its end (ADR 0135): the provider drops the connection, or the client goes away.
// Every call ends in `gen_ai_client_operation_duration_seconds` exactly once, by who cut it (`provider_disconnected`,
// `cancelled`), tracing or not; the usage seen so far is counted and a virtual key settles on it (ADR 0116).
// Real gateway, the `openai` client on an Anthropic stand-in (translated) and the Anthropic client (passed through).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';
import { scrape, value } from '../helpers/metrics.ts';
import { accessRecords, aiPreset, aiRoute } from './harness.ts';
import { frame, sse } from './stream-fixtures.ts';
import { encodeEventStreamMessage } from '../../plugins/lib/llm/event-stream.ts';

const KEY = 'sk-cut-0123456789abcdef';
/** The start of an answer: 10 input tokens reported, one text delta; then the provider cuts or hangs. */
const START =
  sse('message_start', { type: 'message_start', message: { id: 'msg_1', type: 'message', role: 'assistant', model: 'claude-x', content: [], stop_reason: null, usage: { input_tokens: 10, output_tokens: 1 } } }) +
  sse('content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }) +
  sse('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hel' } });

/** Anthropic's overload, reported in the stream after it began. */
const ANTHROPIC_ERROR = sse('error', { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } });
/** OpenRouter's error chunk: the upstream model failed after the stream began. */
const OPENAI_START = sse(undefined, { id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'gpt-x', choices: [{ index: 0, delta: { role: 'assistant', content: 'Hel' }, finish_reason: null }] });
const OPENAI_ERROR = sse(undefined, { id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'gpt-x', error: { code: 502, message: 'Provider returned error' }, choices: [{ index: 0, delta: { content: '' }, finish_reason: 'error' }] });

/** A Bedrock ConverseStream throttled after it began: an `exception` message of the AWS event stream. */
const BEDROCK_THROTTLED = Buffer.concat([
  frame('messageStart', { role: 'assistant' }),
  frame('contentBlockDelta', { contentBlockIndex: 0, delta: { text: 'Hel' } }),
  encodeEventStreamMessage({ ':exception-type': 'throttlingException', ':content-type': 'application/json', ':message-type': 'exception' }, Buffer.from(JSON.stringify({ message: 'Too many tokens, please wait before trying again.' }))),
]);

// Traced, the call's span also listens for the exchange's abort: the outcome must be the same, and counted once.
for (const traced of [false, true]) describe(`a streamed LLM call cut short${traced ? ', traced' : ''}`, () => {
  let gw: RunningGateway;
  let provider: TestUpstream;
  let base: string;

  before(async () => {
    provider = await startUpstream((req, res) => {
      if (req.url!.endsWith('/converse-stream')) return void res.writeHead(200, { 'content-type': 'application/vnd.amazon.eventstream' }).end(BEDROCK_THROTTLED);
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const mode = req.headers['x-mode'];
      // `error`: the provider reports an error in the stream (Anthropic's overload, OpenRouter's error chunk) and ends it.
      if (mode === 'error' && req.url === '/v1/chat/completions') return void res.end(OPENAI_START + OPENAI_ERROR);
      if (mode === 'error') return void res.end(START + ANTHROPIC_ERROR);
      if (mode !== undefined && req.url === '/v1/chat/completions') res.write(OPENAI_START);
      else res.write(START);
      // `cut`: the provider drops the connection mid-answer; else it goes silent until the client leaves.
      if (req.headers['x-mode'] === 'cut') setTimeout(() => res.socket?.destroy(), 30);
    });
    const port = await freePort();
    // Spans go to a port nobody listens on: only the call's span matters here, not its export.
    const tracing = traced ? { tracing: { otlpEndpoint: `http://127.0.0.1:${await freePort()}`, otlpProtocol: 'http', randomSampling: true } } : {};
    base = `http://127.0.0.1:${port}`;
    const virtualKeys = { store: { sqlite: { path: ':memory:' } }, keys: [{ id: 'k', key: KEY, budgets: [{ tokens: 100_000, period: 'day' }] }] };
    const ai = { name: 'a', provider: { anthropic: {} }, hostOverride: `127.0.0.1:${provider.port}` };
    const oa = { name: 'o', provider: { openAI: {} }, hostOverride: `127.0.0.1:${provider.port}` };
    const br = { name: 'b', provider: { bedrock: { region: 'us-east-1' } }, hostOverride: `127.0.0.1:${provider.port}` };
    gw = await startGateway(
      { config: { logging: { format: 'json', level: 'info' }, ...tracing }, binds: [{ port, listeners: [{ routes: [aiRoute('/a', ai, { virtualKeys, ai: { routes: { '/v1/messages': 'messages', '*': 'completions' } } }), aiRoute('/o', oa, { ai: { routes: { '/v1/messages': 'messages', '*': 'completions' } } }), aiRoute('/i', { ...oa, name: 'i' }, { timeout: { streamIdleTimeout: '300ms' }, ai: { routes: { '/v1/messages': 'messages', '*': 'completions' } } }), aiRoute('/t', { ...ai, name: 't' }, { timeout: { requestTimeout: '400ms' }, ai: { routes: { '/v1/messages': 'messages', '*': 'completions' } } }), aiRoute('/b', br, { backendAuth: { aws: { accessKeyId: 'AKID', secretAccessKey: 'secret', region: 'us-east-1', serviceName: 'bedrock' } }, ai: { routes: { '/v1/messages': 'messages', '/v1/responses': 'responses', '*': 'completions' } } })] }] }] },
      { preset: aiPreset },
    );
  });
  after(async () => {
    await gw?.stop();
    await provider?.close();
  });

  const durations = async (model: string, provider = 'anthropic'): Promise<Record<string, number | undefined>> => {
    const m = await scrape(gw);
    const call = { gen_ai_operation_name: 'chat', gen_ai_provider_name: provider, gen_ai_request_model: model };
    const count = (error_type: string) => value(m, 'gen_ai_client_operation_duration_seconds_count', { ...call, error_type });
    return { ok: count(''), timeout: count('timeout'), cancelled: count('cancelled'), cut: count('provider_disconnected'), other: count('_OTHER'), overloaded: count('529'), bad: count('502'), throttled: count('429'), input: value(m, 'gen_ai_client_token_usage_sum', { ...call, gen_ai_token_type: 'input' }) };
  };
  const used = async (): Promise<number> => {
    const body = (await (await fetch(`${gw.adminUrl}/keys/k/usage`)).json()) as { usage: { used: number }[] };
    return body.usage[0]!.used;
  };

  it('the provider cuts a translated stream: provider_disconnected, the usage so far counted and settled', async () => {
    const before = await used();
    const client = new OpenAI({ baseURL: `${base}/a/v1`, apiKey: KEY, maxRetries: 0, defaultHeaders: { 'x-mode': 'cut' } });
    const stream = await client.chat.completions.create({ model: 'claude-cut', max_tokens: 20, stream: true, messages: [{ role: 'user', content: 'hello' }] });
    let text = '';
    await assert.rejects(async () => {
      for await (const c of stream) text += c.choices[0]?.delta?.content ?? '';
    });
    assert.equal(text, 'Hel');
    const [rec] = await accessRecords(gw, '/a/v1/chat/completions');
    assert.match(String(rec!.error), /upstream stream failed/);
    await sleep(50);
    assert.deepEqual(await durations('claude-cut'), { ok: undefined, timeout: undefined, cancelled: undefined, cut: 1, other: undefined, overloaded: undefined, bad: undefined, throttled: undefined, input: 10 });
    assert.equal((await used()) - before, 11, 'settled on the usage seen: 10 in, 1 out');
  });

  it("a translated stream the provider cuts or leaves silent ends with an error event in the client's API, not a bare connection error (ADR 0199)", async () => {
    // The OpenAI client on the Anthropic provider: its SDK raises the `error` chunk as an APIError.
    const openai = new OpenAI({ baseURL: `${base}/a/v1`, apiKey: KEY, maxRetries: 0, defaultHeaders: { 'x-mode': 'cut' } });
    let text = '';
    const err = await (async () => {
      for await (const c of await openai.chat.completions.create({ model: 'claude-cut2', max_tokens: 20, stream: true, messages: [{ role: 'user', content: 'hello' }] })) text += c.choices[0]?.delta?.content ?? '';
    })().then(() => assert.fail('the stream ended well'), (e: unknown) => e);
    assert.equal(text, 'Hel');
    assert.ok(err instanceof OpenAI.APIError, String(err));
    assert.match(err.message, /the provider cut the stream/);
    // The Anthropic client on an OpenAI provider gone silent past the idle timeout: `event: error`.
    const anthropic = new Anthropic({ baseURL: `${base}/i`, apiKey: KEY, maxRetries: 0, defaultHeaders: { 'x-mode': 'silent' } });
    const events: string[] = [];
    const silent = await (async () => {
      for await (const e of await anthropic.messages.create({ model: 'gpt-idle', max_tokens: 20, stream: true, messages: [{ role: 'user', content: 'hello' }] })) events.push(e.type);
    })().then(() => assert.fail('the stream ended well'), (e: unknown) => e);
    assert.ok(events.includes('content_block_delta'), events.join());
    assert.ok(silent instanceof Anthropic.APIError, String(silent));
    assert.match(silent.message, /silent longer than the stream idle timeout/);
    const [rec] = await accessRecords(gw, '/i/v1/messages');
    assert.match(String(rec!.error), /upstream stream failed/);
  });

  it("the provider's error event ends the stream: the call failed, by the error's status (Anthropic's overload: 529), translated or not", async () => {
    const openai = new OpenAI({ baseURL: `${base}/a/v1`, apiKey: KEY, maxRetries: 0, defaultHeaders: { 'x-mode': 'error' } });
    const stream = await openai.chat.completions.create({ model: 'claude-err', max_tokens: 20, stream: true, messages: [{ role: 'user', content: 'hello' }] });
    await assert.rejects(async () => {
      for await (const _ of stream);
    }, /Overloaded/);
    const anthropic = new Anthropic({ baseURL: `${base}/a`, apiKey: KEY, maxRetries: 0, defaultHeaders: { 'x-mode': 'error' } });
    await assert.rejects(anthropic.messages.stream({ model: 'claude-err', max_tokens: 20, messages: [{ role: 'user', content: 'hello' }] }).finalMessage(), /Overloaded/);
    await accessRecords(gw, '/a/v1/messages');
    await sleep(50);
    assert.deepEqual(await durations('claude-err'), { ok: undefined, timeout: undefined, cancelled: undefined, cut: undefined, other: undefined, overloaded: 2, bad: undefined, throttled: undefined, input: 20 });
  });

  it("an OpenAI-compatible provider's error chunk (OpenRouter): the call failed with the error's code", async () => {
    const openai = new OpenAI({ baseURL: `${base}/o/v1`, apiKey: KEY, maxRetries: 0, defaultHeaders: { 'x-mode': 'error' } });
    const stream = await openai.chat.completions.create({ model: 'gpt-err', stream: true, messages: [{ role: 'user', content: 'hello' }] });
    await assert.rejects(async () => {
      for await (const _ of stream);
    });
    await accessRecords(gw, '/o/v1/chat/completions');
    await sleep(50);
    assert.deepEqual(await durations('gpt-err', 'openai'), { ok: undefined, timeout: undefined, cancelled: undefined, cut: undefined, other: undefined, overloaded: undefined, bad: 1, throttled: undefined, input: undefined });
  });

  it("Bedrock's exception message ends the stream: the call failed, by the exception's status (throttlingException: 429)", async () => {
    const openai = new OpenAI({ baseURL: `${base}/b/v1`, apiKey: 'unused', maxRetries: 0 });
    const stream = await openai.chat.completions.create({ model: 'amazon.nova-err', stream: true, messages: [{ role: 'user', content: 'hello' }] });
    await assert.rejects(async () => {
      for await (const _ of stream);
    }, /Too many tokens/);
    const anthropic = new Anthropic({ baseURL: `${base}/b`, apiKey: 'unused', maxRetries: 0 });
    await assert.rejects(anthropic.messages.stream({ model: 'amazon.nova-err', max_tokens: 20, messages: [{ role: 'user', content: 'hello' }] }).finalMessage(), (err: Error & { error?: unknown }) => {
      // Anthropic's type for the exception's status, as its clients switch on it.
      assert.deepEqual(err.error, { type: 'error', error: { type: 'rate_limit_error', message: 'Too many tokens, please wait before trying again.' } });
      return true;
    });
    // A Responses client's `error` event names the exception (`code` is a name in that API).
    const res = await fetch(`${base}/b/v1/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'amazon.nova-err', input: 'hello', stream: true }) });
    const error = (await res.text()).split('\n').filter((l) => l.startsWith('data: ')).map((l) => JSON.parse(l.slice(6)) as { type: string; code?: unknown }).find((e) => e.type === 'error');
    assert.equal(error?.code, 'throttlingException');
    await accessRecords(gw, '/b/v1/responses');
    await sleep(50);
    const seen = await durations('amazon.nova-err', 'aws.bedrock');
    assert.deepEqual({ ...seen, input: undefined }, { ok: undefined, timeout: undefined, cancelled: undefined, cut: undefined, other: undefined, overloaded: undefined, bad: undefined, throttled: 3, input: undefined });
  });

  it('the client leaves a passed-through stream: cancelled, once; the key settles on the usage seen', async () => {
    const before = await used();
    const client = new Anthropic({ baseURL: `${base}/a`, apiKey: KEY, maxRetries: 0, defaultHeaders: { 'x-mode': 'hang' } });
    const stream = await client.messages.create({ model: 'claude-left', max_tokens: 20, stream: true, messages: [{ role: 'user', content: 'hello' }] });
    // Leaving the loop aborts the SDK's request: the connection to the gateway is closed.
    for await (const e of stream) if (e.type === 'content_block_delta') break;
    await accessRecords(gw, '/a/v1/messages');
    await sleep(50);
    assert.deepEqual(await durations('claude-left'), { ok: undefined, timeout: undefined, cancelled: 1, cut: undefined, other: undefined, overloaded: undefined, bad: undefined, throttled: undefined, input: 10 });
    assert.equal((await used()) - before, 11, 'settled on the usage seen: 10 in, 1 out (ADR 0116: a client that left is no failure)');
  });

  it("the route's deadline cuts a stream mid-answer: timeout, not the client's cancel", async () => {
    const client = new OpenAI({ baseURL: `${base}/t/v1`, apiKey: KEY, maxRetries: 0, defaultHeaders: { 'x-mode': 'hang' } });
    const stream = await client.chat.completions.create({ model: 'claude-slow', max_tokens: 20, stream: true, messages: [{ role: 'user', content: 'hello' }] });
    let text = '';
    await assert.rejects(async () => {
      for await (const c of stream) text += c.choices[0]?.delta?.content ?? '';
    });
    assert.equal(text, 'Hel');
    const [rec] = await accessRecords(gw, '/t/v1/chat/completions');
    assert.match(String(rec!.error), /request timeout while streaming/);
    await sleep(50);
    assert.deepEqual(await durations('claude-slow'), { ok: undefined, timeout: 1, cancelled: undefined, cut: undefined, other: undefined, overloaded: undefined, bad: undefined, throttled: undefined, input: 10 });
  });

  it('the client leaves a translated stream: cancelled', async () => {
    const client = new OpenAI({ baseURL: `${base}/a/v1`, apiKey: KEY, maxRetries: 0, defaultHeaders: { 'x-mode': 'hang' } });
    const stream = await client.chat.completions.create({ model: 'claude-gone', max_tokens: 20, stream: true, messages: [{ role: 'user', content: 'hello' }] });
    for await (const c of stream) if (c.choices[0]?.delta?.content) break;
    await accessRecords(gw, '/a/v1/chat/completions', 2);
    await sleep(50);
    assert.deepEqual(await durations('claude-gone'), { ok: undefined, timeout: undefined, cancelled: 1, cut: undefined, other: undefined, overloaded: undefined, bad: undefined, throttled: undefined, input: 10 });
  });
});
