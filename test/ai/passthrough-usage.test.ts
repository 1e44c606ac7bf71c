// `passthrough` routes settle on the provider's usage (ADR 0164): the request is forwarded unread, so its reservation
// is only what the route reserves without a body (no prompt estimate; a virtual key's output estimate), and an answer
// whose shape the path names (OpenAI Chat Completions and Responses, Anthropic Messages, Gemini `generateContent`,
// whole or streamed) is read for its usage on the way, as translated routes' answers are. Real `openai` and
// `@anthropic-ai/sdk` clients and raw Gemini-native HTTP against aimock; a "hello" answer is 11 + 5 = 16 tokens. A
// virtual key settles the same way (its output estimate reserved, the usage charged).
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { accessRecords, aiRoute, startAiGateway, startMock } from './harness.ts';
import type { AiGateway, Mock } from './harness.ts';
import { testTempDir } from '../helpers/temp-dir.ts';
import { scrape, value } from '../helpers/metrics.ts';
import { encodeEventStreamMessage } from '../../plugins/lib/llm/event-stream.ts';

const PASSTHROUGH = { testAi: { routes: { '*': 'passthrough' } } };
const tokens = (maxTokens: number) => ({ localRateLimit: [{ maxTokens, tokensPerFill: maxTokens, fillInterval: '1h', type: 'tokens' }] });

describe('passthrough answers settle on their usage', () => {
  let mock: Mock;
  let gw: AiGateway;
  let dir: string;
  const KEY = 'sk-pass-0123456789abcdefgh';

  before(async () => {
    mock = await startMock();
    dir = testTempDir('switchyard-pt-');
    const virtualKeys = { store: { sqlite: { path: join(dir, 'keys.db') } }, keys: [{ id: 'pass', key: KEY, owner: 'p@example.com', budgets: [{ tokens: 10_000, period: 'day' }] }] };
    const route = (prefix: string, provider: Record<string, unknown>) => aiRoute(prefix, { name: prefix.slice(1), provider, hostOverride: mock.hostPort }, { ...PASSTHROUGH, ...tokens(1000) });
    gw = await startAiGateway([
      route('/chat', { openAI: {} }),
      route('/chatstream', { openAI: {} }),
      route('/nousage', { openAI: {} }),
      route('/resp', { openAI: {} }),
      // aimock serves Anthropic and Gemini at their own paths only: routes without a prefix of their own.
      route('/v1/messages', { anthropic: {} }),
      route('/v1beta', { gemini: {} }),
      aiRoute('/model', { name: 'br', provider: { bedrock: { region: 'us-east-1' } }, hostOverride: mock.hostPort }, { ...PASSTHROUGH, ...tokens(1000), backendAuth: { aws: { accessKeyId: 'AKIDPT', secretAccessKey: 'pt-secret', region: 'us-east-1', serviceName: 'bedrock' } } }),
      aiRoute('/vk', { name: 'vk', provider: { openAI: {} }, hostOverride: mock.hostPort }, { ...PASSTHROUGH, virtualKeys }),
    ]);
  });
  after(async () => {
    await gw?.stop();
    await mock?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const openai = (prefix: string) => new OpenAI({ baseURL: `${gw.base}${prefix}/v1`, apiKey: 'sk-test', maxRetries: 0 });
  /** The bucket left after the answers so far, as the next answer's header says (it reserves 0: no prompt read). */
  const remaining = async (prefix: string, path = '/v1/models'): Promise<number> => {
    const res = await fetch(`${gw.base}${prefix}${path}`);
    await res.arrayBuffer();
    return Number(res.headers.get('x-ratelimit-remaining'));
  };
  const logged = async (path: string) => {
    const [log] = await accessRecords(gw, path);
    return { input: log!['llm.inputTokens'], output: log!['llm.outputTokens'], model: log!['llm.responseModel'] };
  };

  it('an OpenAI Chat Completions answer: its usage logged and charged', async () => {
    const res = await openai('/chat').chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hello' }] });
    assert.equal(res.choices[0]!.message.content, 'Hello from the mock!');
    assert.deepEqual(await logged('/chat/v1/chat/completions'), { input: 11, output: 5, model: res.model });
    assert.equal(await remaining('/chat'), 1000 - 16);
  });

  it('a streamed one with include_usage: the usage chunk read (the stream as it came, [DONE] included)', async () => {
    const stream = await openai('/chatstream').chat.completions.create({ model: 'gpt-4o', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'hello' }] });
    let text = '';
    let usage: unknown;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content ?? '';
      if (chunk.usage) usage = chunk.usage;
    }
    assert.equal(text, 'Hello from the mock!');
    assert.deepEqual(usage, { prompt_tokens: 11, completion_tokens: 5, total_tokens: 16 });
    const log = await logged('/chatstream/v1/chat/completions');
    assert.deepEqual([log.input, log.output], [11, 5]);
    assert.equal(await remaining('/chatstream'), 1000 - 16);
  });

  it('a stream whose client did not ask for usage: the provider asked for it, the client not given it, the usage charged (ADR 0190)', async () => {
    let left = 1000;
    for (const streamOptions of [undefined, { include_usage: false }]) {
      const stream = await openai('/nousage').chat.completions.create({ model: 'gpt-4o', stream: true, ...(streamOptions ? { stream_options: streamOptions } : {}), messages: [{ role: 'user', content: 'hello' }] });
      let text = '';
      for await (const chunk of stream) {
        assert.ok(chunk.choices.length > 0, 'no usage chunk (choices: []) relayed');
        assert.ok(!chunk.usage, 'no usage relayed');
        text += chunk.choices[0]!.delta?.content ?? '';
      }
      assert.equal(text, 'Hello from the mock!');
      const logs = await accessRecords(gw, '/nousage/v1/chat/completions', streamOptions ? 2 : 1);
      const log = logs[logs.length - 1]!;
      assert.deepEqual([log['llm.inputTokens'], log['llm.outputTokens']], [11, 5]);
      left -= 16;
      assert.equal(await remaining('/nousage'), left);
    }
  });

  it('an OpenAI Responses stream: response.completed carries the usage', async () => {
    const stream = openai('/resp').responses.stream({ model: 'gpt-4o', input: 'hello' });
    const final = await stream.finalResponse();
    assert.equal(final.output_text, 'Hello from the mock!');
    const log = await logged('/resp/v1/responses');
    assert.equal(typeof log.input, 'number');
    assert.equal(await remaining('/resp'), 1000 - (log.input as number) - (log.output as number));
  });

  it('an Anthropic Messages stream: message_start and message_delta usage', async () => {
    const anthropic = new Anthropic({ baseURL: gw.base, apiKey: 'sk-ant-test', maxRetries: 0 });
    const final = await anthropic.messages.stream({ model: 'claude-haiku-4-5', max_tokens: 32, messages: [{ role: 'user', content: 'hello' }] }).finalMessage();
    assert.equal(final.usage.output_tokens, 5);
    const log = await logged('/v1/messages');
    assert.deepEqual([log.input, log.output], [11, 5]);
    assert.equal(await remaining('/v1/messages', '/batches'), 1000 - 16);
  });

  it('a Gemini generateContent answer: usageMetadata', async () => {
    const path = '/v1beta/models/gemini-2.5-flash:generateContent';
    const res = await fetch(`${gw.base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-goog-api-key': 'AIzaTest' }, body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'hello' }] }] }) });
    const body = (await res.json()) as { usageMetadata?: { promptTokenCount: number; candidatesTokenCount: number } };
    assert.equal(res.status, 200);
    const log = await logged(path);
    assert.deepEqual([log.input, log.output], [body.usageMetadata!.promptTokenCount, body.usageMetadata!.candidatesTokenCount]);
    assert.equal(await remaining('/v1beta', '/models'), 1000 - (log.input as number) - (log.output as number));
  });

  it("a Gemini JSON-array stream (no alt=sse): the provider asked for events, the client given its array, the usage charged (ADR 0190)", async () => {
    const path = '/v1beta/models/gemini-2.5-flash:streamGenerateContent';
    const before = await remaining('/v1beta', '/models');
    const res = await fetch(`${gw.base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-goog-api-key': 'AIzaTest' }, body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'hello' }] }] }) });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /application\/json/);
    const elements = (await res.json()) as { candidates?: { content?: { parts?: { text?: string }[] } }[]; usageMetadata?: { promptTokenCount: number; candidatesTokenCount: number } }[];
    assert.ok(Array.isArray(elements) && elements.length > 0);
    const text = elements.map((e) => e.candidates?.[0]?.content?.parts?.[0]?.text ?? '').join('');
    assert.equal(text, 'Hello from the mock!');
    const usage = elements.findLast((e) => e.usageMetadata)!.usageMetadata!;
    const log = await logged(path);
    assert.deepEqual([log.input, log.output], [usage.promptTokenCount, usage.candidatesTokenCount]);
    assert.equal(await remaining('/v1beta', '/models'), before - usage.promptTokenCount - usage.candidatesTokenCount);
  });

  it("a virtual key's token budget: the answer's usage, not the output estimate reserved (256)", async () => {
    await new OpenAI({ baseURL: `${gw.base}/vk/v1`, apiKey: KEY, maxRetries: 0 }).chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hello' }] });
    // Settlement runs in the log phase, just after the answer.
    let used = NaN;
    for (let i = 0; i < 100 && used !== 16; i++) {
      const res = await fetch(`${gw.adminUrl}/keys/pass/usage`);
      const rows = ((await res.json()) as { usage: { scope: string; used: unknown }[] }).usage;
      used = Number(rows.find((r) => r.scope === 'key:pass')?.used);
      if (used !== 16) await sleep(20);
    }
    assert.equal(used, 16);
  });

  it('Bedrock Converse, whole and streamed (an AWS event stream): its usage', async () => {
    const body = JSON.stringify({ messages: [{ role: 'user', content: [{ text: 'hello' }] }] });
    for (const op of ['converse', 'converse-stream']) {
      const path = `/model/${encodeURIComponent('anthropic.claude-3-haiku-20240307-v1:0')}/${op}`;
      const res = await fetch(`${gw.base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      assert.equal(res.status, 200);
      await res.arrayBuffer();
      const [log] = await accessRecords(gw, path);
      assert.deepEqual([log!['llm.inputTokens'], log!['llm.outputTokens']], [11, 5], op);
    }
  });

  it("Bedrock's invoke-with-response-stream: the base64 chunks read, Claude's usage and other models' invocation metrics charged (ADR 0190)", async () => {
    // Bedrock's InvokeModelWithResponseStream: `chunk` events whose payload is `{"bytes": <base64 of the model's JSON>}`.
    const chunk = (event: Record<string, unknown>): Buffer =>
      encodeEventStreamMessage({ ':event-type': 'chunk', ':content-type': 'application/json', ':message-type': 'event' }, Buffer.from(JSON.stringify({ bytes: Buffer.from(JSON.stringify(event)).toString('base64') })));
    const streams: Record<string, Buffer[]> = {
      claude: [
        chunk({ type: 'message_start', message: { id: 'msg_1', type: 'message', role: 'assistant', model: 'claude-3-haiku-20240307', content: [], usage: { input_tokens: 25, output_tokens: 1 } } }),
        chunk({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'hi' } }),
        chunk({ type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 7 } }),
        chunk({ type: 'message_stop', 'amazon-bedrock-invocationMetrics': { inputTokenCount: 25, outputTokenCount: 7, invocationLatency: 100, firstByteLatency: 50 } }),
      ],
      llama: [
        chunk({ generation: 'hi', prompt_token_count: 30, generation_token_count: 1, stop_reason: null }),
        chunk({ generation: '', prompt_token_count: null, generation_token_count: 12, stop_reason: 'stop', 'amazon-bedrock-invocationMetrics': { inputTokenCount: 30, outputTokenCount: 12, invocationLatency: 90, firstByteLatency: 40 } }),
      ],
    };
    const upstream = createServer((req, res) => {
      req.resume();
      const frames = streams[req.url!.includes('anthropic') ? 'claude' : 'llama']!;
      res.writeHead(200, { 'content-type': 'application/vnd.amazon.eventstream' });
      for (const f of frames) res.write(f);
      res.end();
    });
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    const hostOverride = `127.0.0.1:${(upstream.address() as AddressInfo).port}`;
    const aws = { aws: { accessKeyId: 'AKIDPT', secretAccessKey: 'pt-secret', region: 'us-east-1', serviceName: 'bedrock' } };
    const own = await startAiGateway([aiRoute('/model', { name: 'brs', provider: { bedrock: { region: 'us-east-1' } }, hostOverride }, { ...PASSTHROUGH, ...tokens(1000), backendAuth: aws })]);
    try {
      const left = async (): Promise<number> => {
        const res = await fetch(`${own.base}/model/x/list`);
        await res.arrayBuffer();
        return Number(res.headers.get('x-ratelimit-remaining'));
      };
      for (const [model, input, output] of [['anthropic.claude-3-haiku-20240307-v1:0', 25, 7], ['meta.llama3-8b-instruct-v1:0', 30, 12]] as const) {
        const before = await left();
        const path = `/model/${encodeURIComponent(model)}/invoke-with-response-stream`;
        const res = await fetch(`${own.base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
        assert.equal(res.status, 200);
        const bytes = Buffer.from(await res.arrayBuffer());
        assert.deepEqual(bytes, Buffer.concat(streams[model.startsWith('anthropic') ? 'claude' : 'llama']!), 'relayed unchanged');
        const [log] = await accessRecords(own, path);
        assert.deepEqual([log!['llm.inputTokens'], log!['llm.outputTokens']], [input, output], model);
        assert.equal(await left(), before - input - output, model);
      }
    } finally {
      await own.stop();
      await new Promise<void>((resolve) => upstream.close(() => resolve()));
    }
  });

  it('/metrics counts the usage read (ADR 0171): calls, tokens, cost and the GenAI histograms, by the model that answered', async () => {
    // A fresh gateway: the calls here are the only ones its metrics saw.
    const own = await startAiGateway([
      aiRoute('/solo', { name: 'solo', provider: { openAI: {} }, hostOverride: mock.hostPort }, PASSTHROUGH),
      aiRoute('/v1/messages', { name: 'claude', provider: { anthropic: {} }, hostOverride: mock.hostPort }, PASSTHROUGH),
    ]);
    try {
      const client = new OpenAI({ baseURL: `${own.base}/solo/v1`, apiKey: 'sk-test', maxRetries: 0 });
      const whole = await client.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hello' }] });
      const stream = await client.chat.completions.create({ model: 'gpt-4o', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'hello' }] });
      for await (const _chunk of stream);
      const anthropic = new Anthropic({ baseURL: own.base, apiKey: 'sk-ant-test', maxRetries: 0 });
      const final = await anthropic.messages.stream({ model: 'claude-haiku-4-5', max_tokens: 32, messages: [{ role: 'user', content: 'hello' }] }).finalMessage();
      await accessRecords(own, '/v1/messages');
      const m = await scrape(own);
      const openai = { provider: 'openai', model: whole.model };
      assert.equal(value(m, 'switchyard_llm_requests_total', { ...openai, streaming: 'false' }), 1);
      assert.equal(value(m, 'switchyard_llm_requests_total', { ...openai, streaming: 'true' }), 1);
      assert.equal(value(m, 'switchyard_llm_tokens_total', { ...openai, type: 'input' }), 22);
      assert.equal(value(m, 'switchyard_llm_tokens_total', { ...openai, type: 'output' }), 10);
      assert.ok((value(m, 'switchyard_llm_cost_usd_total', openai) ?? 0) > 0, 'the cost counted');
      const genAi = { gen_ai_operation_name: 'chat', gen_ai_provider_name: 'openai', gen_ai_request_model: whole.model };
      assert.equal(value(m, 'gen_ai_client_token_usage_count', { ...genAi, gen_ai_token_type: 'input' }), 2);
      assert.equal(value(m, 'gen_ai_client_operation_duration_seconds_count', { ...genAi, error_type: '' }), 2);
      assert.equal(value(m, 'gen_ai_client_operation_time_to_first_chunk_seconds_count', genAi), 1);
      const claude = { provider: 'anthropic', model: final.model };
      assert.equal(value(m, 'switchyard_llm_requests_total', { ...claude, streaming: 'true' }), 1);
      assert.equal(value(m, 'switchyard_llm_tokens_total', { ...claude, type: 'output' }), 5);
    } finally {
      await own.stop();
    }
  });
});
