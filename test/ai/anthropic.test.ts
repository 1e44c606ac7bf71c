// The `ai` backend with the `anthropic` provider: Anthropic clients natively, OpenAI clients translated (real SDKs,
// aimock upstream, a recording hop in between to see the exact wire request).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { accessRecords, aiRoute, recordedAi, rejection } from './harness.ts';

const ROUTES = { testAi: { routes: { '/v1/messages': 'messages', '/v1/messages/count_tokens': 'anthropicTokenCount', '/v1/responses': 'responses', '*': 'completions' } } };

describe('ai backend, anthropic provider', () => {
  const t = recordedAi((hostPort) => [
    aiRoute('/keyed', { name: 'keyed', provider: { anthropic: {} }, hostOverride: hostPort }, { ...ROUTES, backendAuth: { key: 'sk-ant-from-policy' } }),
    aiRoute('/an', { name: 'an', provider: { vendorThree: {} }, hostOverride: hostPort }, ROUTES),
  ]);

  const anthropicClient = (prefix: string, apiKey = 'sk-ant-test'): Anthropic => new Anthropic({ baseURL: `${t.gw.base}${prefix}`, apiKey, maxRetries: 0 });
  const openaiClient = (prefix: string, apiKey = 'sk-ant-bearer'): OpenAI => new OpenAI({ baseURL: `${t.gw.base}${prefix}`, apiKey, maxRetries: 0 });

  describe('Anthropic clients (native Messages)', () => {
    it('forwards a message to /v1/messages, keeping the SDK\'s anthropic-version, and logs usage', async () => {
      const msg = await anthropicClient('/an/native').messages.create({ model: 'claude-test-1', max_tokens: 100, messages: [{ role: 'user', content: 'hello' }] });
      assert.deepEqual(msg.content, [{ type: 'text', text: 'Hello from the mock!' }]);
      assert.equal(msg.stop_reason, 'end_turn');
      const wire = t.rec.last();
      assert.equal(wire.url, '/v1/messages');
      assert.ok(wire.headers['anthropic-version'], 'the SDK sends its own anthropic-version');
      assert.equal(wire.headers['x-api-key'], 'sk-ant-test');
      assert.deepEqual(wire.json(), { model: 'claude-test-1', max_tokens: 100, messages: [{ role: 'user', content: 'hello' }] });
      const [log] = await accessRecords(t.gw, '/an/native/v1/messages');
      assert.equal(log!['llm.provider'], 'anthropic');
      assert.equal(log!['llm.model'], 'claude-test-1');
      assert.equal(log!['llm.inputTokens'], 11);
      assert.equal(log!['llm.outputTokens'], 5);
    });

    it('streams a message through unchanged and logs the streamed usage', async () => {
      const stream = anthropicClient('/an/native-stream').messages.stream({ model: 'claude-test-1', max_tokens: 100, messages: [{ role: 'user', content: 'hello' }] });
      let text = '';
      stream.on('text', (t) => (text += t));
      const final = await stream.finalMessage();
      assert.equal(text, 'Hello from the mock!');
      assert.equal(final.stop_reason, 'end_turn');
      assert.equal(t.rec.last().json().stream, true);
      assert.equal(t.rec.last().json().stream_options, undefined, 'no OpenAI stream_options on an Anthropic request');
      const [log] = await accessRecords(t.gw, '/an/native-stream/v1/messages');
      assert.equal(log!['llm.streaming'], true);
      assert.equal(log!['llm.inputTokens'], 11);
      assert.equal(log!['llm.outputTokens'], 5);
    });

    it('moves a Bearer key from backendAuth into x-api-key', async () => {
      await anthropicClient('/keyed/native').messages.create({ model: 'claude-test-1', max_tokens: 10, messages: [{ role: 'user', content: 'hello' }] });
      const h = t.rec.last().headers;
      assert.equal(h['x-api-key'], 'sk-ant-from-policy');
      assert.equal(h.authorization, undefined);
    });

    it('keeps an OAuth token (sk-ant-oat…) in Authorization', async () => {
      const res = await fetch(`${t.gw.base}/an/oauth/v1/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'Bearer sk-ant-oat01-abc' },
        body: JSON.stringify({ model: 'claude-test-1', max_tokens: 10, messages: [{ role: 'user', content: 'hello' }] }),
      });
      assert.equal(res.status, 200);
      const h = t.rec.last().headers;
      assert.equal(h.authorization, 'Bearer sk-ant-oat01-abc');
      assert.equal(h['x-api-key'], undefined);
    });

    it('keeps a client anthropic-version header', async () => {
      await fetch(`${t.gw.base}/an/version/v1/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'anthropic-version': '2023-01-01', 'x-api-key': 'k' },
        body: JSON.stringify({ model: 'claude-test-1', max_tokens: 10, messages: [{ role: 'user', content: 'hello' }] }),
      });
      assert.equal(t.rec.last().headers['anthropic-version'], '2023-01-01');
    });

    it('passes a 429 through in the Anthropic error shape', async () => {
      const err = await rejection(anthropicClient('/an/boom').messages.create({ model: 'claude-test-1', max_tokens: 10, messages: [{ role: 'user', content: 'boom' }] }), Anthropic.RateLimitError);
      assert.deepEqual(err.error, { type: 'error', error: { type: 'rate_limit_error', message: 'rate limited' } });
    });

    it('sends count_tokens to /v1/messages/count_tokens', async () => {
      const res = await fetch(`${t.gw.base}/an/count/v1/messages/count_tokens`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': 'k' },
        body: JSON.stringify({ model: 'claude-test-1', messages: [{ role: 'user', content: 'hello' }] }),
      });
      assert.equal(t.rec.last().url, '/v1/messages/count_tokens');
      assert.ok(res.status < 500);
    });
  });

  describe('OpenAI clients (Chat Completions translated to Messages)', () => {
    it('translates a completion with a system prompt and answers in the OpenAI shape', async () => {
      const res = await openaiClient('/an/chat/v1').chat.completions.create({
        model: 'claude-test-1',
        max_tokens: 50,
        temperature: 0.2,
        stop: 'END',
        messages: [
          { role: 'system', content: 'Be brief.' },
          { role: 'user', content: 'hello' },
        ],
      });
      assert.equal(res.object, 'chat.completion');
      assert.equal(res.choices[0]!.message.content, 'Hello from the mock!');
      assert.equal(res.choices[0]!.finish_reason, 'stop');
      assert.deepEqual(res.usage, { prompt_tokens: 11, completion_tokens: 5, total_tokens: 16 });
      const wire = t.rec.last();
      assert.equal(wire.url, '/v1/messages');
      assert.equal(wire.headers['x-api-key'], 'sk-ant-bearer', 'the Bearer key moved to x-api-key');
      assert.equal(wire.headers['anthropic-version'], '2023-06-01', 'added for a client that sent none');
      assert.equal(wire.headers.authorization, undefined);
      assert.deepEqual(wire.json(), {
        model: 'claude-test-1',
        messages: [{ role: 'user', content: 'hello' }],
        system: 'Be brief.',
        max_tokens: 50,
        temperature: 0.2,
        stop_sequences: ['END'],
      });
      const [log] = await accessRecords(t.gw, '/an/chat/v1/chat/completions');
      assert.equal(log!['llm.provider'], 'anthropic');
      assert.equal(log!['llm.inputTokens'], 11);
    });

    it('defaults max_tokens, which Anthropic requires', async () => {
      await openaiClient('/an/chat-max/v1').chat.completions.create({ model: 'claude-test-1', messages: [{ role: 'user', content: 'hello' }] });
      assert.equal(t.rec.last().json().max_tokens, 4096);
    });

    it('translates tools, a tool call and tool results both ways', async () => {
      const tools: OpenAI.Chat.ChatCompletionTool[] = [
        { type: 'function', function: { name: 'get_weather', description: 'Weather of a city', parameters: { type: 'object', properties: { city: { type: 'string' } } } } },
      ];
      const res = await openaiClient('/an/tools/v1').chat.completions.create({ model: 'claude-test-1', tool_choice: 'required', tools, messages: [{ role: 'user', content: 'weather' }] });
      const call = res.choices[0]!.message.tool_calls![0]!;
      assert.equal(res.choices[0]!.finish_reason, 'tool_calls');
      assert.ok(call.type === 'function');
      assert.equal(call.function.name, 'get_weather');
      assert.deepEqual(JSON.parse(call.function.arguments), { city: 'Paris' });
      const sent = t.rec.last().json();
      assert.deepEqual(sent.tools, [{ name: 'get_weather', input_schema: { type: 'object', properties: { city: { type: 'string' } } }, description: 'Weather of a city' }]);
      assert.deepEqual(sent.tool_choice, { type: 'any' });

      // The next turn carries the assistant's tool call and the tool's result.
      await openaiClient('/an/tools2/v1').chat.completions.create({
        model: 'claude-test-1',
        tools,
        messages: [
          { role: 'user', content: 'weather' },
          { role: 'assistant', content: null, tool_calls: [{ id: call.id, type: 'function', function: { name: 'get_weather', arguments: call.function.arguments } }] },
          { role: 'tool', tool_call_id: call.id, content: 'sunny' },
        ],
      });
      assert.deepEqual(t.rec.last().json().messages, [
        { role: 'user', content: 'weather' },
        { role: 'assistant', content: [{ type: 'tool_use', id: call.id, name: 'get_weather', input: { city: 'Paris' } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: 'sunny' }] },
      ]);
    });

    it('translates a streamed answer chunk by chunk into chat.completion.chunks ending with [DONE]', async () => {
      const res = await fetch(`${t.gw.base}/an/stream/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'Bearer sk-ant-bearer' },
        body: JSON.stringify({ model: 'claude-test-1', stream: true, messages: [{ role: 'user', content: 'hello' }] }),
      });
      assert.equal(res.status, 200);
      assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream/);
      const raw = await res.text();
      const frames = raw.split('\n\n').filter(Boolean);
      assert.equal(frames[frames.length - 1], 'data: [DONE]');
      const chunks = frames.slice(0, -1).map((f) => JSON.parse(f.replace(/^data: /, '')) as { object: string; choices: { delta: { content?: string }; finish_reason: string | null }[]; usage?: unknown });
      assert.ok(chunks.every((c) => c.object === 'chat.completion.chunk'));
      assert.equal(chunks.map((c) => c.choices[0]?.delta.content ?? '').join(''), 'Hello from the mock!');
      assert.equal(chunks.find((c) => c.choices[0]?.finish_reason)?.choices[0]!.finish_reason, 'stop');
      assert.deepEqual(chunks[chunks.length - 1]!.usage, { prompt_tokens: 11, completion_tokens: 5, total_tokens: 16 });
      assert.equal(t.rec.last().json().stream, true);
      const [log] = await accessRecords(t.gw, '/an/stream/v1/chat/completions');
      assert.equal(log!['llm.streaming'], true);
      assert.equal(log!['llm.outputTokens'], 5);
    });

    it('streams a translated tool call that the openai SDK reassembles', async () => {
      const stream = await openaiClient('/an/stream-tool/v1').chat.completions.create({
        model: 'claude-test-1',
        stream: true,
        tools: [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object' } } }],
        messages: [{ role: 'user', content: 'weather' }],
      });
      let name = '';
      let args = '';
      let finish: string | null = null;
      for await (const chunk of stream) {
        for (const tc of chunk.choices[0]?.delta.tool_calls ?? []) {
          name += tc.function?.name ?? '';
          args += tc.function?.arguments ?? '';
        }
        finish = chunk.choices[0]?.finish_reason ?? finish;
      }
      assert.equal(name, 'get_weather');
      assert.deepEqual(JSON.parse(args), { city: 'Paris' });
      assert.equal(finish, 'tool_calls');
    });

    it('translates a 429 into the OpenAI error shape', async () => {
      const err = await rejection(openaiClient('/an/boom/v1').chat.completions.create({ model: 'claude-test-1', messages: [{ role: 'user', content: 'boom' }] }), OpenAI.RateLimitError);
      assert.deepEqual(err.error, { message: 'rate limited', type: 'rate_limit_error', param: null, code: null });
    });

    it('serves the Responses API through Messages (docs/llm.md; test/ai/responses-translated.test.ts has the rest)', async () => {
      const r = await openaiClient('/an/resp/v1').responses.create({ model: 'claude-test-1', input: 'hello' });
      assert.equal(r.object, 'response');
      assert.equal(r.output_text, 'Hello from the mock!');
      assert.equal(t.rec.last().url, '/v1/messages');
      assert.deepEqual(t.rec.last().json().messages, [{ role: 'user', content: 'hello' }]);
    });
  });
});
