// Gemini's native API behind the `ai` backend: OpenAI Chat Completions and Anthropic Messages clients translated to
// `generateContent` / `streamGenerateContent?alt=sse` and back, Gemini clients (`generateContent`,
// `geminiCountTokens` routes) served natively, on the `gemini` provider and Vertex's Google publisher endpoint.
// aimock plays Gemini and Vertex (REAL-PEERS.md §5); a recorder in front keeps the exact wire requests.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';
import { startGceMetadata } from '../helpers/gce-metadata.ts';
import type { GceMetadata } from '../helpers/gce-metadata.ts';
import { accessRecords, aiRoute, FIXTURES, startAiGateway, startMock, startRecorder } from './harness.ts';
import type { AiGateway, Mock, Recorder } from './harness.ts';

/** A longer answer streamed in 8-character chunks, so the stream is translated chunk by chunk. */
const STORY = 'Once upon a time, a gateway translated every chunk.';
const GEMINI_FIXTURES = [{ match: { userMessage: 'story' }, response: { content: STORY, usage: { prompt_tokens: 9, completion_tokens: 12 } }, chunkSize: 8 }, ...FIXTURES];

const NATIVE_ROUTES = { testAi: { routes: { ':generateContent': 'generateContent', ':streamGenerateContent': 'generateContent', ':countTokens': 'geminiCountTokens', '/v1/messages': 'messages', '*': 'completions' } } };

const WEATHER_TOOL = {
  type: 'function' as const,
  function: {
    name: 'get_weather',
    description: 'Weather in a city',
    parameters: { $schema: 'http://json-schema.org/draft-07/schema#', type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false },
  },
};

async function sseData(res: Response): Promise<string[]> {
  const text = await res.text();
  return text
    .split('\n')
    .filter((l) => l.startsWith('data: '))
    .map((l) => l.slice('data: '.length));
}

describe('gemini provider: native generateContent', () => {
  let mock: Mock;
  let rec: Recorder;
  let counter: TestUpstream;
  let gw: AiGateway;

  before(async () => {
    mock = await startMock(GEMINI_FIXTURES);
    rec = await startRecorder(mock.url);
    counter = await startUpstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ totalTokens: 7, promptTokensDetails: [{ modality: 'TEXT', tokenCount: 7 }] }));
    });
    gw = await startAiGateway([
      aiRoute('/gm', { name: 'gm', provider: { gemini: {} }, hostOverride: rec.hostPort }, NATIVE_ROUTES),
      aiRoute('/gkey', { name: 'gkey', provider: { vendorTwo: { model: 'gemini-2.5-pro' } }, hostOverride: rec.hostPort }, { ...NATIVE_ROUTES, backendAuth: { key: 'AIzaFromPolicy' } }),
      aiRoute('/gcompat', { name: 'gcompat', provider: { gemini: { openAICompatible: true } }, hostOverride: rec.hostPort }),
      aiRoute('/gdetect', { name: 'gdetect', provider: { gemini: {} }, hostOverride: rec.hostPort }, { testAi: { routes: { '*': 'detect' } } }),
      aiRoute('/gcount', { name: 'gcount', provider: { gemini: {} }, hostOverride: `127.0.0.1:${counter.port}` }, NATIVE_ROUTES),
      aiRoute('/gcanth', { name: 'gcanth', provider: { gemini: { model: 'gemini-2.5-flash' } }, hostOverride: `127.0.0.1:${counter.port}` }, { testAi: { routes: { '/v1/messages/count_tokens': 'anthropicTokenCount' } } }),
      aiRoute('/oa', { name: 'oa', provider: { openAI: {} }, hostOverride: rec.hostPort }, NATIVE_ROUTES),
      // The real `ai` policy: `detect` tells Gemini clients from OpenAI ones.
      aiRoute('/greal', { name: 'greal', provider: { gemini: {} }, hostOverride: rec.hostPort }, { ai: { routes: { '*': 'detect' } } }),
    ]);
  });
  after(async () => {
    await gw?.stop();
    await rec?.close();
    await counter?.close();
    await mock?.stop();
  });

  const client = (prefix: string, apiKey = 'AIzaClientKey'): OpenAI => new OpenAI({ baseURL: `${gw.base}${prefix}/v1`, apiKey, maxRetries: 0 });

  it('translates a completion to /v1beta/models/<m>:generateContent with the API key in x-goog-api-key', async () => {
    const res = await client('/gm').chat.completions.create({
      model: 'gemini-2.5-flash',
      max_tokens: 64,
      temperature: 0.5,
      stop: ['END'],
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'hello' },
      ],
    });
    assert.equal(res.object, 'chat.completion');
    assert.equal(res.choices[0]!.message.role, 'assistant');
    assert.equal(res.choices[0]!.message.content, 'Hello from the mock!');
    assert.equal(res.choices[0]!.finish_reason, 'stop');
    assert.equal(res.model, 'gemini-2.5-flash');
    assert.deepEqual(res.usage, { prompt_tokens: 11, completion_tokens: 5, total_tokens: 16 });
    const wire = rec.last();
    assert.equal(wire.url, '/v1beta/models/gemini-2.5-flash:generateContent');
    assert.equal(wire.headers['x-goog-api-key'], 'AIzaClientKey', 'an AIza… Bearer key goes to x-goog-api-key on native endpoints');
    assert.equal(wire.headers.authorization, undefined);
    assert.deepEqual(wire.json(), {
      contents: [{ role: 'user', parts: [{ text: 'hello' }] }],
      systemInstruction: { parts: [{ text: 'Be brief.' }] },
      generationConfig: { maxOutputTokens: 64, temperature: 0.5, stopSequences: ['END'] },
    });
    const [log] = await accessRecords(gw, '/gm/v1/chat/completions');
    assert.equal(log!['llm.provider'], 'gcp.gemini');
    assert.equal(log!['llm.model'], 'gemini-2.5-flash');
    assert.equal(log!['llm.streaming'], false);
    assert.equal(log!['llm.inputTokens'], 11);
    assert.equal(log!['llm.outputTokens'], 5);
  });

  it('moves a backendAuth key to x-goog-api-key and uses the provider model in the path', async () => {
    const res = await client('/gkey', 'ignored').chat.completions.create({ model: 'anything', messages: [{ role: 'user', content: 'hello' }] });
    assert.equal(res.choices[0]!.message.content, 'Hello from the mock!');
    const wire = rec.last();
    assert.equal(wire.url, '/v1beta/models/gemini-2.5-pro:generateContent');
    assert.equal(wire.headers['x-goog-api-key'], 'AIzaFromPolicy');
    assert.equal(wire.headers.authorization, undefined);
  });

  it("a Gemini client's key in the query (`?key=`, Google's REST examples) reaches the provider as x-goog-api-key", async () => {
    const res = await fetch(`${gw.base}/gm/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse&key=AIzaQueryKey`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'hello' }] }] }),
    });
    assert.equal(res.status, 200);
    assert.match(await res.text(), /Hello from the mock!|Hello|mock/);
    const wire = rec.last();
    assert.equal(wire.url, '/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse', 'the key is not in the URL');
    assert.equal(wire.headers['x-goog-api-key'], 'AIzaQueryKey');
  });

  it('refuses a tool schema whose $refs would inline into millions of schemas (each level twice the last), quickly', async () => {
    const defs: Record<string, unknown> = {};
    for (let i = 0; i < 30; i++) defs[`d${i}`] = { type: 'object', properties: { a: { $ref: `#/$defs/d${i + 1}` }, b: { $ref: `#/$defs/d${i + 1}` } } };
    defs.d30 = { type: 'string' };
    const before = rec.received.length;
    const started = performance.now();
    const err = await client('/gm')
      .chat.completions.create({ model: 'gemini-2.5-flash', tools: [{ type: 'function', function: { name: 'bomb', parameters: { $defs: defs, $ref: '#/$defs/d0' } } }], messages: [{ role: 'user', content: 'hello' }] })
      .then(() => undefined, (e: unknown) => e);
    assert.ok(err instanceof OpenAI.BadRequestError, String(err));
    assert.match(err.message, /cannot translate the request: .*\$ref/);
    assert.ok(performance.now() - started < 2000, 'refused without inlining 2^30 schemas');
    assert.equal(rec.received.length, before, 'the provider was not called');
  });

  it("sends the backendAuth key, not the client's: an AIza Bearer key or a Gemini SDK's x-goog-api-key", async () => {
    await client('/gkey', 'AIzaClientKey').chat.completions.create({ model: 'anything', messages: [{ role: 'user', content: 'hello' }] });
    assert.equal(rec.last().headers['x-goog-api-key'], 'AIzaFromPolicy');
    assert.equal(rec.last().headers.authorization, undefined);
    const res = await fetch(`${gw.base}/gkey/v1beta/models/gemini-2.5-flash:generateContent`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-goog-api-key': 'client-own-key' },
      body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'hello' }] }] }),
    });
    assert.equal(res.status, 200);
    assert.equal(rec.last().headers['x-goog-api-key'], 'AIzaFromPolicy');
    assert.equal(rec.last().headers.authorization, undefined);
  });

  it('translates tools, tool_choice, assistant tool calls and tool results (multi-turn)', async () => {
    const res = await client('/gm').chat.completions.create({
      model: 'gemini-2.5-flash',
      tools: [WEATHER_TOOL],
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
      messages: [
        { role: 'user', content: 'weather?' },
        { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
        { role: 'tool', tool_call_id: 'call_1', content: '{"temp":21}' },
        { role: 'user', content: 'and so?' },
      ],
    });
    assert.equal(res.choices[0]!.message.content, 'default reply');
    assert.deepEqual(rec.last().json(), {
      contents: [
        { role: 'user', parts: [{ text: 'weather?' }] },
        { role: 'model', parts: [{ functionCall: { name: 'get_weather', args: { city: 'Paris' } } }] },
        { role: 'user', parts: [{ functionResponse: { name: 'get_weather', response: { temp: 21 } } }, { text: 'and so?' }] },
      ],
      tools: [{ functionDeclarations: [{ name: 'get_weather', description: 'Weather in a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } }] }],
      toolConfig: { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['get_weather'] } },
    });
  });

  it('turns a functionCall into tool_calls with finish_reason tool_calls', async () => {
    const res = await client('/gm').chat.completions.create({ model: 'gemini-2.5-flash', tools: [WEATHER_TOOL], tool_choice: 'auto', messages: [{ role: 'user', content: 'weather' }] });
    const choice = res.choices[0]!;
    assert.equal(choice.finish_reason, 'tool_calls');
    assert.equal(choice.message.content, null);
    const call = choice.message.tool_calls![0]!;
    assert.ok(call.type === 'function');
    assert.match(call.id, /^call_/);
    assert.equal(call.function.name, 'get_weather');
    assert.deepEqual(JSON.parse(call.function.arguments), { city: 'Paris' });
    assert.deepEqual(res.usage, { prompt_tokens: 20, completion_tokens: 7, total_tokens: 27 });
    assert.deepEqual(rec.last().json().toolConfig, { functionCallingConfig: { mode: 'AUTO' } });
  });

  it('streams: Gemini SSE chunks become chat.completion.chunks, then a usage chunk and [DONE]', async () => {
    const stream = await client('/gm').chat.completions.create({ model: 'gemini-2.5-flash', stream: true, messages: [{ role: 'user', content: 'story' }] });
    const deltas: string[] = [];
    let finish: string | null = null;
    let usage: unknown;
    let role: string | undefined;
    for await (const chunk of stream) {
      assert.equal(chunk.object, 'chat.completion.chunk');
      role ??= chunk.choices[0]?.delta.role;
      if (chunk.choices[0]?.delta.content) deltas.push(chunk.choices[0].delta.content);
      finish = chunk.choices[0]?.finish_reason ?? finish;
      if (chunk.usage) usage = chunk.usage;
    }
    assert.equal(role, 'assistant');
    assert.equal(deltas.join(''), STORY);
    assert.ok(deltas.length >= 6, `translated chunk by chunk (${deltas.length} deltas)`);
    assert.equal(finish, 'stop');
    assert.deepEqual(usage, { prompt_tokens: 9, completion_tokens: 12, total_tokens: 21 });
    assert.equal(rec.last().url, '/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse');
    assert.equal(rec.last().json().stream, undefined, 'Gemini streams by path, not by a body field');
    const logs = await accessRecords(gw, '/gm/v1/chat/completions', 4);
    const log = logs[logs.length - 1]!;
    assert.equal(log['llm.streaming'], true);
    assert.equal(log['llm.inputTokens'], 9);
    assert.equal(log['llm.outputTokens'], 12);
  });

  it('streams raw: the usage chunk (choices: []) comes right before data: [DONE]', async () => {
    const res = await fetch(`${gw.base}/gm/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer AIzaClientKey' },
      body: JSON.stringify({ model: 'gemini-2.5-flash', stream: true, messages: [{ role: 'user', content: 'hello' }] }),
    });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream/);
    const data = await sseData(res);
    assert.equal(data[data.length - 1], '[DONE]');
    const usageChunk = JSON.parse(data[data.length - 2]!) as { choices: unknown[]; usage: unknown };
    assert.deepEqual(usageChunk.choices, []);
    assert.deepEqual(usageChunk.usage, { prompt_tokens: 11, completion_tokens: 5, total_tokens: 16 });
    const finishChunk = JSON.parse(data[data.length - 3]!) as { choices: { finish_reason: string }[] };
    assert.equal(finishChunk.choices[0]!.finish_reason, 'stop');
  });

  it('streams a function call as a tool_calls delta', async () => {
    const stream = await client('/gm').chat.completions.create({ model: 'gemini-2.5-flash', stream: true, tools: [WEATHER_TOOL], messages: [{ role: 'user', content: 'weather' }] });
    const calls: { index: number; id?: string; name?: string; args: string }[] = [];
    let finish: string | null = null;
    for await (const chunk of stream) {
      for (const tc of chunk.choices[0]?.delta.tool_calls ?? []) calls.push({ index: tc.index, id: tc.id, name: tc.function?.name, args: tc.function?.arguments ?? '' });
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    assert.equal(calls.length, 1);
    assert.equal(calls[0]!.index, 0);
    assert.match(calls[0]!.id!, /^call_/);
    assert.equal(calls[0]!.name, 'get_weather');
    assert.deepEqual(JSON.parse(calls[0]!.args), { city: 'Paris' });
    assert.equal(finish, 'tool_calls');
  });

  it('returns a Gemini error in the OpenAI error shape', async () => {
    await assert.rejects(client('/gm').chat.completions.create({ model: 'gemini-2.5-flash', messages: [{ role: 'user', content: 'boom' }] }), (err) => {
      assert.ok(err instanceof OpenAI.RateLimitError);
      assert.equal(err.status, 429);
      assert.equal((err.error as { message: string }).message, 'rate limited');
      return true;
    });
  });

  it('serves an Anthropic Messages client through Chat Completions to generateContent, streamed and not', async () => {
    const anthropic = new Anthropic({ baseURL: `${gw.base}/gm`, apiKey: 'AIzaAnthropicClient', maxRetries: 0 });
    const msg = await anthropic.messages.create({ model: 'gemini-2.5-flash', max_tokens: 32, system: 'Be brief.', messages: [{ role: 'user', content: 'hello' }] });
    assert.deepEqual(msg.content, [{ type: 'text', text: 'Hello from the mock!' }]);
    assert.equal(msg.stop_reason, 'end_turn');
    assert.deepEqual(msg.usage, { input_tokens: 11, output_tokens: 5 });
    const wire = rec.last();
    assert.equal(wire.url, '/v1beta/models/gemini-2.5-flash:generateContent');
    assert.equal(wire.headers['x-goog-api-key'], 'AIzaAnthropicClient');
    assert.equal(wire.headers['x-api-key'], undefined);
    assert.deepEqual(wire.json(), { contents: [{ role: 'user', parts: [{ text: 'hello' }] }], systemInstruction: { parts: [{ text: 'Be brief.' }] }, generationConfig: { maxOutputTokens: 32 } });

    const final = await anthropic.messages.stream({ model: 'gemini-2.5-flash', max_tokens: 32, messages: [{ role: 'user', content: 'story' }] }).finalMessage();
    assert.deepEqual(final.content, [{ type: 'text', text: STORY }]);
    assert.equal(final.stop_reason, 'end_turn');
    assert.equal(final.usage.output_tokens, 12);
    assert.equal(rec.last().url, '/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse');
  });

  it("carries an Anthropic client's top_k and a failed tool result (is_error) to Gemini: topK, functionResponse.response.error", async () => {
    const anthropic = new Anthropic({ baseURL: `${gw.base}/gm`, apiKey: 'AIzaAnthropicClient', maxRetries: 0 });
    // A Messages API member this SDK version's types do not list: spread in, sent as written.
    const topK: Record<string, unknown> = { top_k: 5 };
    await anthropic.messages.create({
      model: 'gemini-2.5-flash',
      max_tokens: 32,
      ...topK,
      tools: [{ name: 'get_weather', input_schema: { type: 'object', properties: { city: { type: 'string' } } } }],
      messages: [
        { role: 'user', content: 'weather?' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Atlantis' } }, { type: 'tool_use', id: 'toolu_2', name: 'get_weather', input: { city: 'Paris' } }] },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'toolu_1', is_error: true, content: 'no such city' },
            { type: 'tool_result', tool_use_id: 'toolu_2', content: '{"temp":21}' },
          ],
        },
      ],
    });
    const wire = rec.last().json() as { contents: { parts: Record<string, unknown>[] }[]; generationConfig: Record<string, unknown> };
    assert.deepEqual(wire.generationConfig, { maxOutputTokens: 32, topK: 5 });
    assert.deepEqual(wire.contents[2]!.parts, [
      { functionResponse: { name: 'get_weather', response: { error: 'no such city' } } },
      { functionResponse: { name: 'get_weather', response: { temp: 21 } } },
    ]);
    // The same request to an OpenAI provider: Chat Completions has neither, and OpenAI refuses members it does not know.
    await new Anthropic({ baseURL: `${gw.base}/oa`, apiKey: 'sk-x', maxRetries: 0 }).messages.create({ model: 'gpt-4o', max_tokens: 32, ...topK, messages: [{ role: 'user', content: 'hello' }] });
    assert.equal(rec.last().json().top_k, undefined);
  });

  it('serves a Gemini client natively: model from the path, body and answer unchanged', async () => {
    const body = { contents: [{ role: 'user', parts: [{ text: 'hello' }] }], generationConfig: { temperature: 0.2 } };
    const res = await fetch(`${gw.base}/gm/v1beta/models/gemini-2.5-flash:generateContent`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-goog-api-key': 'AIzaNativeKey' },
      body: JSON.stringify(body),
    });
    assert.equal(res.status, 200);
    const answer = (await res.json()) as { candidates: { content: { parts: { text: string }[] }; finishReason: string }[]; usageMetadata: unknown };
    assert.equal(answer.candidates[0]!.content.parts[0]!.text, 'Hello from the mock!');
    assert.equal(answer.candidates[0]!.finishReason, 'STOP');
    assert.deepEqual(answer.usageMetadata, { promptTokenCount: 11, candidatesTokenCount: 5, totalTokenCount: 16 });
    const wire = rec.last();
    assert.equal(wire.url, '/v1beta/models/gemini-2.5-flash:generateContent');
    assert.deepEqual(wire.json(), body, 'no model field is added to a native body');
    assert.equal(wire.headers['x-goog-api-key'], 'AIzaNativeKey');
    const [log] = await accessRecords(gw, '/gm/v1beta/models/gemini-2.5-flash:generateContent');
    assert.equal(log!['llm.model'], 'gemini-2.5-flash');
    assert.equal(log!['llm.inputTokens'], 11);
    assert.equal(log!['llm.outputTokens'], 5);
  });

  it('streams to a Gemini client natively (streamGenerateContent?alt=sse passes through)', async () => {
    const res = await fetch(`${gw.base}/gm/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-goog-api-key': 'AIzaNativeKey' },
      body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'story' }] }] }),
    });
    assert.equal(res.status, 200);
    const chunks = (await sseData(res)).map((d) => JSON.parse(d) as { candidates: { content: { parts: { text: string }[] } }[] });
    assert.ok(chunks.length >= 6);
    assert.equal(chunks.map((c) => c.candidates[0]!.content.parts[0]!.text).join(''), STORY);
    assert.equal(rec.last().url, '/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse');
    const logs = await accessRecords(gw, '/gm/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse');
    const log = logs[logs.length - 1]!;
    assert.equal(log['llm.streaming'], true);
    assert.equal(log['llm.outputTokens'], 12);
  });

  it("streams as Google's JSON array to a Gemini client that did not ask for alt=sse (the provider still asked for SSE)", async () => {
    for (const query of ['', '?alt=json']) {
      const path = `/gm/v1beta/models/gemini-2.5-flash:streamGenerateContent${query}`;
      const res = await fetch(`${gw.base}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-goog-api-key': 'AIzaNativeKey' },
        body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'story' }] }] }),
      });
      assert.equal(res.status, 200, query);
      assert.match(res.headers.get('content-type') ?? '', /^application\/json/, query);
      const text = await res.text();
      assert.ok(text.startsWith('[') && text.trimEnd().endsWith(']'), text.slice(0, 80));
      const chunks = JSON.parse(text) as { candidates: { content: { parts: { text: string }[] } }[] }[];
      assert.ok(Array.isArray(chunks) && chunks.length >= 6, query);
      assert.equal(chunks.map((c) => c.candidates[0]!.content.parts[0]!.text).join(''), STORY, query);
      assert.equal(rec.last().url, '/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse', query);
      const logs = await accessRecords(gw, path);
      const log = logs[logs.length - 1]!;
      assert.equal(log['llm.streaming'], true, query);
      assert.equal(log['llm.outputTokens'], 12, query);
    }
  });

  it('passes a Gemini error to a Gemini client unchanged', async () => {
    const res = await fetch(`${gw.base}/gm/v1beta/models/gemini-2.5-flash:generateContent`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'boom' }] }] }),
    });
    assert.equal(res.status, 429);
    assert.deepEqual(await res.json(), { error: { code: 429, message: 'rate limited', status: 'rate_limit_error' } });
  });

  it('replaces the path model with provider.model and tells native requests apart under detect', async () => {
    const res = await fetch(`${gw.base}/gkey/v1beta/models/gemini-2.0-flash:generateContent`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'hello' }] }] }),
    });
    assert.equal(res.status, 200);
    assert.equal(rec.last().url, '/v1beta/models/gemini-2.5-pro:generateContent');

    const detected = await fetch(`${gw.base}/gdetect/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'hello' }] }] }),
    });
    assert.equal(detected.status, 200);
    assert.equal((await sseData(detected)).length, 1);
    assert.equal(rec.last().url, '/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse');
  });

  it('serves Gemini and OpenAI clients on one route under the ai policy\'s detect', async () => {
    const native = await fetch(`${gw.base}/greal/v1beta/models/gemini-2.5-flash:generateContent`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-goog-api-key': 'AIzaNativeKey' },
      body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'hello' }] }] }),
    });
    assert.equal(native.status, 200);
    assert.ok(Array.isArray(((await native.json()) as { candidates: unknown }).candidates));
    assert.equal(rec.last().url, '/v1beta/models/gemini-2.5-flash:generateContent');
    const res = await client('/greal').chat.completions.create({ model: 'gemini-2.5-flash', messages: [{ role: 'user', content: 'hello' }] });
    assert.equal(res.choices[0]!.message.content, 'Hello from the mock!');
    assert.deepEqual(rec.last().json(), { contents: [{ role: 'user', parts: [{ text: 'hello' }] }] });
  });

  it('sends countTokens natively', async () => {
    const body = { contents: [{ role: 'user', parts: [{ text: 'hello' }] }] };
    const res = await fetch(`${gw.base}/gcount/v1beta/models/gemini-2.5-flash:countTokens`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer AIzaCount' }, body: JSON.stringify(body) });
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { totalTokens: 7, promptTokensDetails: [{ modality: 'TEXT', tokenCount: 7 }] });
    const got = counter.received[counter.received.length - 1]!;
    assert.equal(got.url, '/v1beta/models/gemini-2.5-flash:countTokens');
    assert.deepEqual(JSON.parse(got.body.toString()), body);
    assert.equal(got.headers['x-goog-api-key'], 'AIzaCount');
  });

  it("counts an Anthropic client's tokens on Gemini's countTokens (system and tools in a generateContentRequest)", async () => {
    const anthropic = new Anthropic({ baseURL: `${gw.base}/gcanth`, apiKey: 'AIzaCountKey', maxRetries: 0 });
    const tools = [{ name: 'get_weather', input_schema: { type: 'object' as const, properties: { city: { type: 'string' } } } }];
    const res = await anthropic.messages.countTokens({ model: 'claude-sonnet-4-5', system: 'Be brief.', tools, messages: [{ role: 'user', content: 'hello' }] });
    assert.deepEqual(res, { input_tokens: 7 });
    const got = counter.received[counter.received.length - 1]!;
    assert.equal(got.url, '/v1beta/models/gemini-2.5-flash:countTokens');
    assert.equal(got.headers['x-goog-api-key'], 'AIzaCountKey');
    assert.deepEqual(JSON.parse(got.body.toString()), {
      generateContentRequest: {
        model: 'models/gemini-2.5-flash',
        contents: [{ role: 'user', parts: [{ text: 'hello' }] }],
        systemInstruction: { parts: [{ text: 'Be brief.' }] },
        tools: [{ functionDeclarations: [{ name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } }] }],
      },
    });
  });

  it('keeps the OpenAI-compatible API available (openAICompatible: true)', async () => {
    const res = await client('/gcompat').chat.completions.create({ model: 'gemini-2.5-flash', messages: [{ role: 'user', content: 'hello' }] });
    assert.equal(res.choices[0]!.message.content, 'Hello from the mock!');
    const wire = rec.last();
    assert.equal(wire.url, '/v1beta/openai/chat/completions');
    assert.equal(wire.headers.authorization, 'Bearer AIzaClientKey', 'the compatible API takes the key as a Bearer token');
    assert.equal(wire.json().model, 'gemini-2.5-flash');
  });

  it('refuses a Gemini client on a provider that does not speak it', async () => {
    const res = await fetch(`${gw.base}/oa/v1beta/models/gemini-2.5-flash:generateContent`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ contents: [] }) });
    assert.equal(res.status, 400);
    // A Gemini client gets Google's error shape.
    assert.deepEqual(await res.json(), {
      error: { code: 400, message: 'failed to process LLM request: unsupported route: the openai provider does not serve generateContent requests', status: 'INVALID_ARGUMENT' },
    });
  });
});

describe('vertex provider: Gemini models on the Google publisher endpoint', () => {
  let mock: Mock;
  let rec: Recorder;
  let gw: AiGateway;
  let metadata: GceMetadata;

  before(async () => {
    metadata = await startGceMetadata('ya29.gemini-token');
    mock = await startMock(GEMINI_FIXTURES);
    rec = await startRecorder(mock.url);
    gw = await startAiGateway([
      aiRoute('/vg', { name: 'vg', provider: { vertex: { projectId: 'my-proj', region: 'us-central1' } }, hostOverride: rec.hostPort }, NATIVE_ROUTES),
      aiRoute('/vgm', { name: 'vgm', provider: { vendorFour: { projectId: 'my-proj', model: 'gemini-2.5-flash' } }, hostOverride: rec.hostPort }),
    ]);
  });
  after(async () => {
    await gw?.stop();
    await rec?.close();
    await mock?.stop();
    await metadata?.close();
  });

  const client = (prefix: string): OpenAI => new OpenAI({ baseURL: `${gw.base}${prefix}/v1`, apiKey: 'unused', maxRetries: 0 });

  it('translates a completion to publishers/google/models/<m>:generateContent with a Google access token', async () => {
    const res = await client('/vg').chat.completions.create({ model: 'gemini-2.5-flash', messages: [{ role: 'system', content: 'sys' }, { role: 'user', content: 'hello' }] });
    assert.equal(res.choices[0]!.message.content, 'Hello from the mock!');
    assert.deepEqual(res.usage, { prompt_tokens: 11, completion_tokens: 5, total_tokens: 16 });
    const wire = rec.last();
    assert.equal(wire.url, '/v1/projects/my-proj/locations/us-central1/publishers/google/models/gemini-2.5-flash:generateContent');
    assert.equal(wire.headers.authorization, 'Bearer ya29.gemini-token');
    assert.equal(wire.headers['x-goog-api-key'], undefined);
    assert.deepEqual(wire.json(), { contents: [{ role: 'user', parts: [{ text: 'hello' }] }], systemInstruction: { parts: [{ text: 'sys' }] } });
    const [log] = await accessRecords(gw, '/vg/v1/chat/completions');
    assert.equal(log!['llm.provider'], 'gcp.vertex_ai');
    assert.equal(log!['llm.inputTokens'], 11);
  });

  it('streams from streamGenerateContent?alt=sse on the global location', async () => {
    let text = '';
    let usage: unknown;
    for await (const c of await client('/vgm').chat.completions.create({ model: 'ignored', stream: true, messages: [{ role: 'user', content: 'story' }] })) {
      text += c.choices[0]?.delta.content ?? '';
      if (c.usage) usage = c.usage;
    }
    assert.equal(text, STORY);
    assert.deepEqual(usage, { prompt_tokens: 9, completion_tokens: 12, total_tokens: 21 });
    assert.equal(rec.last().url, '/v1/projects/my-proj/locations/global/publishers/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse');
    assert.equal(rec.last().headers.authorization, 'Bearer ya29.gemini-token');
  });

  it('serves a Gemini client natively, on the configured project and location', async () => {
    const res = await fetch(`${gw.base}/vg/v1/projects/other/locations/europe-west4/publishers/google/models/gemini-2.5-flash:generateContent`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'hello' }] }] }),
    });
    assert.equal(res.status, 200);
    const answer = (await res.json()) as { candidates: { content: { parts: { text: string }[] } }[] };
    assert.equal(answer.candidates[0]!.content.parts[0]!.text, 'Hello from the mock!');
    assert.equal(rec.last().url, '/v1/projects/my-proj/locations/us-central1/publishers/google/models/gemini-2.5-flash:generateContent');
  });

  it("sends only the Google token: a client's key (x-goog-api-key, an AIza Bearer key) does not go beside it", async () => {
    const res = await fetch(`${gw.base}/vg/v1beta/models/gemini-2.5-flash:generateContent`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-goog-api-key': 'client-own-key' },
      body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'hello' }] }] }),
    });
    assert.equal(res.status, 200);
    assert.equal(rec.last().headers.authorization, 'Bearer ya29.gemini-token');
    assert.equal(rec.last().headers['x-goog-api-key'], undefined);
    await new OpenAI({ baseURL: `${gw.base}/vg/v1`, apiKey: 'AIzaClientKey', maxRetries: 0 }).chat.completions.create({ model: 'gemini-2.5-flash', messages: [{ role: 'user', content: 'hello' }] });
    assert.equal(rec.last().headers.authorization, 'Bearer ya29.gemini-token');
    assert.equal(rec.last().headers['x-goog-api-key'], undefined);
  });

  it('returns a Vertex error in the OpenAI error shape', async () => {
    await assert.rejects(client('/vg').chat.completions.create({ model: 'gemini-2.5-flash', messages: [{ role: 'user', content: 'boom' }] }), (err) => {
      assert.ok(err instanceof OpenAI.RateLimitError);
      assert.equal((err.error as { message: string }).message, 'rate limited');
      return true;
    });
  });
});

describe('gemini provider: passthrough routes', () => {
  let upstream: TestUpstream;
  let gw: AiGateway;

  before(async () => {
    upstream = await startUpstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    });
    const passthrough = { testAi: { routes: { '*': 'passthrough' } } };
    gw = await startAiGateway([
      aiRoute('/gpk', { name: 'gpk', provider: { gemini: {} }, hostOverride: `127.0.0.1:${upstream.port}` }, { ...passthrough, backendAuth: { key: 'AIzaFromPolicy' } }),
      aiRoute('/gpc', { name: 'gpc', provider: { gemini: {} }, hostOverride: `127.0.0.1:${upstream.port}` }, passthrough),
    ]);
  });
  after(async () => {
    await gw?.stop();
    await upstream?.close();
  });

  const post = (path: string, headers: Record<string, string> = {}): Promise<Response> =>
    fetch(`${gw.base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'hello' }] }] }) });
  const last = (): (typeof upstream.received)[number] => upstream.received[upstream.received.length - 1]!;

  it("sends a backendAuth key in x-goog-api-key on a native path, never the client's own key (header, Bearer or ?key=)", async () => {
    for (const [query, headers] of [
      ['', {}],
      ['', { 'x-goog-api-key': 'AIzaClientHeader' }],
      ['', { authorization: 'Bearer AIzaClientBearer' }],
      ['?alt=sse&key=AIzaClientQuery', {}],
    ] as const) {
      const res = await post(`/gpk/v1beta/models/gemini-2.5-flash:streamGenerateContent${query}`, headers);
      assert.equal(res.status, 200);
      await res.arrayBuffer();
      const got = last();
      assert.equal(got.headers['x-goog-api-key'], 'AIzaFromPolicy', JSON.stringify(headers) + query);
      assert.equal(got.headers.authorization, undefined);
      assert.doesNotMatch(got.url, /key=/, 'the client key is not sent in the URL');
    }
    assert.equal(last().url, '/gpk/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse', 'the rest of the query passes');
  });

  it('keeps a Bearer key on the OpenAI-compatible path (that API takes it so)', async () => {
    for (const [query, headers] of [
      ['', { 'x-goog-api-key': 'AIzaClientHeader' }],
      ['?key=AIzaClientQuery', {}],
    ] as const) {
      const res = await post(`/gpk/v1beta/openai/chat/completions${query}`, headers);
      assert.equal(res.status, 200);
      assert.equal(last().headers.authorization, 'Bearer AIzaFromPolicy');
      assert.equal(last().headers['x-goog-api-key'], undefined);
      assert.equal(last().url, '/gpk/v1beta/openai/chat/completions');
    }
  });

  it("without backendAuth, a client's AIza Bearer key goes to a native path as x-goog-api-key", async () => {
    const res = await post('/gpc/v1beta/models/gemini-2.5-flash:generateContent', { authorization: 'Bearer AIzaClientBearer' });
    assert.equal(res.status, 200);
    assert.equal(last().headers['x-goog-api-key'], 'AIzaClientBearer');
    assert.equal(last().headers.authorization, undefined);
  });
});
