// The `ai` backend with the `openAI` provider, driven by the real `openai` SDK against aimock (REAL-PEERS.md §5).
import assert from 'node:assert/strict';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import * as zlib from 'node:zlib';
import { describe, it } from 'node:test';
import OpenAI from 'openai';
import { accessRecords, aiRoute, recordedAi, sdkClients } from './harness.ts';

describe('ai backend, openAI provider', () => {
  const t = recordedAi((hostPort) => [
    aiRoute('/fixed', { name: 'fixed', provider: { vendorOne: { model: 'gpt-4o-mini' } }, hostOverride: hostPort }),
    aiRoute('/models', { name: 'models', provider: { openAI: {} }, hostOverride: hostPort }, { testAi: { routes: { '/v1/models': 'models', '*': 'completions' } } }),
    aiRoute('/formats', { name: 'formats', provider: { openAI: {} }, hostOverride: hostPort }, { testAi: { routes: { '/v1/responses': 'responses', '/v1/embeddings': 'embeddings', '/v1/chat/completions': 'completions' } } }),
    aiRoute('/over', { name: 'over', provider: { openAI: {} }, hostOverride: hostPort, pathOverride: '/v1/chat/completions?via=override' }),
    aiRoute('/oa', { name: 'oa', provider: { openAI: {} }, hostOverride: hostPort }),
    aiRoute('/limited', { name: 'limited', provider: { openAI: {} }, hostOverride: hostPort }, { localRateLimit: [{ maxTokens: 100_000, tokensPerFill: 100_000, fillInterval: '1h', type: 'tokens' }] }),
  ]);

  const client = (prefix: string): OpenAI => sdkClients(() => t.gw.base, 'sk-test').openai(prefix);

  it('forwards a chat completion to /v1/chat/completions and logs provider, model and tokens', async () => {
    const res = await client('/oa/text').chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hello' }] });
    assert.equal(res.choices[0]!.message.content, 'Hello from the mock!');
    assert.deepEqual(res.usage, { prompt_tokens: 11, completion_tokens: 5, total_tokens: 16 });
    const wire = t.rec.last();
    assert.equal(wire.url, '/v1/chat/completions', 'the provider path replaces the client path');
    assert.equal(wire.headers.authorization, 'Bearer sk-test', 'the client key goes upstream without a backendAuth policy');
    assert.equal(wire.headers['content-length'], String(wire.body.length));
    assert.equal(wire.headers['accept-encoding'], 'identity');
    assert.equal(wire.headers.host, t.rec.hostPort);
    assert.deepEqual(wire.json(), { model: 'gpt-4o', messages: [{ role: 'user', content: 'hello' }] });
    const [log] = await accessRecords(t.gw, '/oa/text/v1/chat/completions');
    assert.equal(log!.protocol, 'llm');
    assert.equal(log!['llm.provider'], 'openai');
    assert.equal(log!['llm.model'], 'gpt-4o');
    assert.equal(log!['llm.streaming'], false);
    assert.equal(log!['llm.inputTokens'], 11);
    assert.equal(log!['llm.outputTokens'], 5);
    assert.equal(log!['llm.responseModel'], undefined, 'the same model is not logged twice');
  });

  it('counts tokens and calls on /metrics by provider and model', async () => {
    const metrics = async (): Promise<string> => (await fetch(`${t.gw.statsUrl}/metrics`)).text();
    const value = (text: string, series: string): number => Number(new RegExp(`^${series.replace(/[{}"]/g, '\\$&')} (\\d+)$`, 'm').exec(text)?.[1] ?? 0);
    const input = 'switchyard_llm_tokens_total{provider="openai",model="gpt-4.1",type="input"}';
    const output = 'switchyard_llm_tokens_total{provider="openai",model="gpt-4.1",type="output"}';
    const calls = 'switchyard_llm_requests_total{provider="openai",model="gpt-4.1",streaming="true"}';
    const before = await metrics();
    const stream = await client('/oa/metrics').chat.completions.create({ model: 'gpt-4.1', stream: true, messages: [{ role: 'user', content: 'hello' }] });
    for await (const _chunk of stream) void _chunk;
    await accessRecords(t.gw, '/oa/metrics/v1/chat/completions');
    const after = await metrics();
    assert.equal(value(after, input) - value(before, input), 11);
    assert.equal(value(after, output) - value(before, output), 5);
    assert.equal(value(after, calls) - value(before, calls), 1);
  });

  it('passes a tool call through', async () => {
    const res = await client('/oa/tool').chat.completions.create({
      model: 'gpt-4o',
      messages: [{ role: 'user', content: 'weather' }],
      tools: [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }],
    });
    const call = res.choices[0]!.message.tool_calls![0]!;
    assert.equal(call.type === 'function' && call.function.name, 'get_weather');
    assert.equal(res.choices[0]!.finish_reason, 'tool_calls');
    assert.equal((t.rec.last().json().tools as unknown[]).length, 1);
  });

  it('streams with usage: asks the provider for a usage chunk and logs the tokens', async () => {
    const stream = await client('/oa/stream').chat.completions.create({ model: 'gpt-4o', stream: true, messages: [{ role: 'user', content: 'hello' }] });
    let text = '';
    let usage: unknown;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      if (chunk.usage) usage = chunk.usage;
    }
    assert.equal(text, 'Hello from the mock!');
    assert.deepEqual(usage, { prompt_tokens: 11, completion_tokens: 5, total_tokens: 16 });
    assert.deepEqual(t.rec.last().json().stream_options, { include_usage: true }, 'stream_options.include_usage injected');
    const [log] = await accessRecords(t.gw, '/oa/stream/v1/chat/completions');
    assert.equal(log!['llm.streaming'], true);
    assert.equal(log!['llm.inputTokens'], 11);
    assert.equal(log!['llm.outputTokens'], 5);
  });

  it('leaves a client-set stream_options alone', async () => {
    const stream = await client('/oa/stream-opts').chat.completions.create({
      model: 'gpt-4o',
      stream: true,
      stream_options: { include_usage: false },
      messages: [{ role: 'user', content: 'hello' }],
    });
    for await (const _ of stream) void _;
    assert.deepEqual(t.rec.last().json().stream_options, { include_usage: false });
  });

  it('on a route that counts tokens, asks for usage even when the client set stream_options without it (and relays no usage chunk to it)', async () => {
    for (const options of [{ include_usage: false, include_obfuscation: false }, { include_obfuscation: false }, null]) {
      const stream = await client('/limited/opts').chat.completions.create({
        model: 'gpt-4o',
        stream: true,
        stream_options: options as OpenAI.ChatCompletionStreamOptions,
        messages: [{ role: 'user', content: 'hello' }],
      });
      let usage: unknown;
      for await (const chunk of stream) if (chunk.usage) usage = chunk.usage;
      assert.deepEqual(t.rec.last().json().stream_options, { ...options, include_usage: true }, 'the client\'s other options kept');
      // The client turned the chunk off: read for the limit, not relayed (ADR 0164; ADR 0116 relayed it).
      assert.equal(usage, undefined);
    }
    const logs = await accessRecords(t.gw, '/limited/opts/v1/chat/completions', 3);
    assert.deepEqual(logs.map((l) => [l['llm.inputTokens'], l['llm.outputTokens']]), [[11, 5], [11, 5], [11, 5]]);
  });

  it('replaces the model with provider.model and logs the model that answered when it differs', async () => {
    const res = await client('/fixed').chat.completions.create({ model: 'whatever', messages: [{ role: 'user', content: 'swap' }] });
    assert.equal(t.rec.last().json().model, 'gpt-4o-mini');
    assert.equal(res.model, 'gpt-4o-2024-08-06');
    const [log] = await accessRecords(t.gw, '/fixed/v1/chat/completions');
    assert.equal(log!['llm.model'], 'gpt-4o-mini');
    assert.equal(log!['llm.responseModel'], 'gpt-4o-2024-08-06');
  });

  it('passes a 429 through in the OpenAI error shape', async () => {
    await assert.rejects(
      client('/oa/boom').chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'boom' }] }),
      (err: InstanceType<typeof OpenAI.RateLimitError>) => {
        assert.ok(err instanceof OpenAI.RateLimitError);
        assert.equal(err.status, 429);
        assert.equal((err.error as { message: string }).message, 'rate limited');
        return true;
      },
    );
  });

  it('answers 400 in OpenAI\'s error shape when no model is given and the provider sets none', async () => {
    const count = t.rec.received.length;
    const res = await fetch(`${t.gw.base}/oa/nomodel/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ messages: [{ role: 'user', content: 'hello' }] }),
    });
    assert.equal(res.status, 400);
    assert.equal(res.headers.get('content-type'), 'application/json');
    assert.deepEqual(await res.json(), { error: { message: 'failed to process LLM request: missing field: model not specified', type: 'invalid_request_error', param: null, code: null } });
    assert.equal(t.rec.received.length, count, 'nothing went upstream');
  });

  it('answers 400 in OpenAI\'s error shape for a model name over 1,024 characters, and counts nothing under it', async () => {
    const count = t.rec.received.length;
    const model = 'm'.repeat(100_000);
    const res = await fetch(`${t.gw.base}/oa/nomodel/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hello' }] }),
    });
    assert.equal(res.status, 400);
    assert.deepEqual(await res.json(), { error: { message: 'failed to process LLM request: model name too long: at most 1024 characters', type: 'invalid_request_error', param: null, code: null } });
    assert.equal(t.rec.received.length, count, 'nothing went upstream');
    assert.ok(!(await (await fetch(`${t.gw.statsUrl}/metrics`)).text()).includes('m'.repeat(300)), 'no series carries the name');
  });

  it('does not require a model when the provider sets one', async () => {
    const res = await fetch(`${t.gw.base}/fixed/nomodel/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ messages: [{ role: 'user', content: 'hello' }] }),
    });
    assert.equal(res.status, 200);
    assert.equal(t.rec.last().json().model, 'gpt-4o-mini');
  });

  it('answers the models route itself (test/ai/models-list.test.ts): no configured model, an empty list', async () => {
    const res = await fetch(`${t.gw.base}/models/v1/models`);
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { object: 'list', data: [] });
  });

  it('answers 400 for a body that is not JSON', async () => {
    const res = await fetch(`${t.gw.base}/oa/bad/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"model":' });
    assert.equal(res.status, 400);
    assert.equal(res.headers.get('content-type'), 'application/json');
    const { error } = (await res.json()) as { error: { message: string; type: string } };
    assert.match(error.message, /^failed to process LLM request: invalid JSON body/);
    assert.equal(error.type, 'invalid_request_error');
  });

  it('answers 400 with JSON.parse\'s own message for bodies that are almost JSON (ADR 0070: the fields walk refuses them too)', async () => {
    const count = t.rec.received.length;
    const bodies = ['{"model":"gpt-4o","messages":[],}', '{"model":"gpt-4o","max_tokens":064}', '{"model":"gpt-4o","x":"a\\qb"}', '{"model":"gpt-4o","x":"tab\there"}', '{"model":"gpt-4o"} {}', '[{"model":"gpt-4o"}]'];
    for (const body of bodies) {
      const res = await fetch(`${t.gw.base}/oa/almost/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      assert.equal(res.status, 400, body);
      const { error } = (await res.json()) as { error: { message: string; type: string } };
      let expected: string;
      try {
        JSON.parse(body);
        expected = 'failed to process LLM request: request body is not a JSON object';
      } catch (err) {
        expected = `failed to process LLM request: invalid JSON body: ${(err as Error).message}`;
      }
      assert.equal(error.message, expected, body);
      assert.equal(error.type, 'invalid_request_error');
    }
    assert.equal(t.rec.received.length, count, 'nothing reached the provider');
  });

  it('sends a valid body the fields walk reads to the provider byte for byte (duplicates, escapes, spacing)', async () => {
    const body = ' {"model":"gpt-4o-mini", "messages":[{"role":"user","content":"h\\u00e9 \\"q\\" \u00e9\\n"}],\n "max_tokens":1e2, "model" : "gpt-4o", "stream":false}\n';
    const res = await fetch(`${t.gw.base}/oa/bytes/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    assert.equal(res.status, 200);
    await res.arrayBuffer();
    const wire = t.rec.last();
    assert.deepEqual(wire.body, Buffer.from(body));
    assert.equal(wire.json().model, 'gpt-4o');
  });

  it('answers 413 for a body over 2 MiB', async () => {
    const count = t.rec.received.length;
    const big = JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content: 'x'.repeat(2 * 1024 * 1024) }] });
    const res = await fetch(`${t.gw.base}/oa/big/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: big });
    assert.equal(res.status, 413);
    assert.deepEqual(await res.json(), { error: { message: 'failed to process LLM request: request body too large', type: 'invalid_request_error', param: null, code: null } });
    assert.equal(t.rec.received.length, count);
  });

  it('answers 413 when a compressed body decodes to more than 2 MiB', async () => {
    const bomb = gzipSync(JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content: 'y'.repeat(3 * 1024 * 1024) }] }));
    assert.ok(bomb.length < 64 * 1024);
    const res = await fetch(`${t.gw.base}/oa/bomb/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' }, body: bomb });
    assert.equal(res.status, 413);
  });

  const encoders: [string, (b: Buffer) => Buffer][] = [
    ['gzip', (b) => gzipSync(b)],
    ['deflate', (b) => deflateSync(b)],
    ['br', (b) => brotliCompressSync(b)],
  ];
  const zstd = (zlib as unknown as { zstdCompressSync?: (b: Buffer) => Buffer }).zstdCompressSync;
  if (zstd) encoders.push(['zstd', (b) => zstd(b)]);
  for (const [name, encode] of encoders) {
    it(`decodes a ${name} request body and sends it on uncompressed`, async () => {
      const body = Buffer.from(JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hello' }] }));
      const res = await fetch(`${t.gw.base}/oa/${name}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-encoding': name },
        body: encode(body),
      });
      assert.equal(res.status, 200);
      assert.equal(((await res.json()) as { choices: { message: { content: string } }[] }).choices[0]!.message.content, 'Hello from the mock!');
      const wire = t.rec.last();
      assert.equal(wire.headers['content-encoding'], undefined);
      assert.deepEqual(wire.json().messages, [{ role: 'user', content: 'hello' }]);
    });
  }

  it('answers 415 for an unknown content encoding', async () => {
    const res = await fetch(`${t.gw.base}/oa/enc/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', 'content-encoding': 'compress' }, body: 'x' });
    assert.equal(res.status, 415);
    assert.match(await res.text(), /unsupported content encoding `compress`/);
  });

  it('strips browser headers before the provider', async () => {
    await fetch(`${t.gw.base}/oa/browser/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: 'https://app.example', 'sec-fetch-mode': 'cors', 'sec-fetch-site': 'cross-site' },
      body: JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hello' }] }),
    });
    const h = t.rec.last().headers;
    assert.equal(h.origin, undefined);
    assert.equal(h['sec-fetch-mode'], undefined);
    assert.equal(h['sec-fetch-site'], undefined);
  });

  it('serves the Responses API natively', async () => {
    const res = await client('/formats').responses.create({ model: 'gpt-4o', input: 'hello' });
    assert.equal(res.output_text, 'Hello from the mock!');
    assert.equal(t.rec.last().url, '/v1/responses');
    const [log] = await accessRecords(t.gw, '/formats/v1/responses');
    assert.equal(log!['llm.model'], 'gpt-4o');
  });

  it('streams the Responses API through unchanged, reading the model from its events', async () => {
    const stream = await client('/formats/stream').responses.create({ model: 'gpt-4o', input: 'hello', stream: true });
    let text = '';
    for await (const ev of stream) if (ev.type === 'response.output_text.delta') text += ev.delta;
    assert.equal(text, 'Hello from the mock!');
    assert.equal(t.rec.last().json().stream_options, undefined, 'stream_options belongs to Chat Completions only');
    const [log] = await accessRecords(t.gw, '/formats/stream/v1/responses');
    assert.equal(log!['llm.streaming'], true);
    assert.equal(log!['llm.model'], 'gpt-4o');
  });

  it('serves embeddings natively', async () => {
    const res = await client('/formats').embeddings.create({ model: 'text-embedding-3-small', input: 'hello' });
    assert.deepEqual(res.data[0]!.embedding, [0.25, 0.5, 0.75]);
    assert.equal(t.rec.last().url, '/v1/embeddings');
  });

  it('sends every request to pathOverride', async () => {
    await client('/over').chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hello' }] });
    assert.equal(t.rec.last().url, '/v1/chat/completions?via=override');
  });

  it('checks the mock journal agrees: one chat request per call, at the provider path', async () => {
    const entries = (await t.mock.journal()).filter((e) => e.path === '/v1/chat/completions');
    assert.ok(entries.length >= 5);
    assert.ok(entries.every((e) => e.method === 'POST'));
  });
});
