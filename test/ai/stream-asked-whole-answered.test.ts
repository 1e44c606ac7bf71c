// A client that asked for a stream, a provider that answered with one JSON body (it ignored `stream: true`, or
// answered from a cache): the client still gets a stream in its own API's shape carrying the whole answer (text, tool
// calls, usage, stop reason), translated or not, so the SDKs' stream helpers put it together. Loopback stand-in
// providers script the answers; the real `openai` and `@anthropic-ai/sdk` clients read them.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type Anthropic from '@anthropic-ai/sdk';
import type OpenAI from 'openai';
import { aiRoute, scriptedAi, sdkClients } from './harness.ts';

const ROUTES = { testAi: { routes: { '/v1/messages': 'messages', '/v1/responses': 'responses', ':streamGenerateContent': 'generateContent', '*': 'completions' } } };

const MESSAGE = {
  id: 'msg_1',
  type: 'message',
  role: 'assistant',
  model: 'claude-x',
  content: [
    { type: 'thinking', thinking: 'Two tools.', signature: 'sig-1' },
    { type: 'text', text: 'Checking.' },
    { type: 'tool_use', id: 'toolu_a', name: 'get_weather', input: { city: 'Paris' } },
    { type: 'tool_use', id: 'toolu_b', name: 'get_time', input: {} },
  ],
  stop_reason: 'tool_use',
  stop_sequence: null,
  usage: { input_tokens: 9, output_tokens: 20 },
};

const COMPLETION = {
  id: 'chatcmpl-1',
  object: 'chat.completion',
  created: 1,
  model: 'gpt-x',
  choices: [
    {
      index: 0,
      message: {
        role: 'assistant',
        content: 'Checking.',
        refusal: null,
        tool_calls: [
          { id: 'call_a', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
          { id: 'call_b', type: 'function', function: { name: 'get_time', arguments: '{}' } },
        ],
      },
      logprobs: null,
      finish_reason: 'tool_calls',
    },
  ],
  usage: { prompt_tokens: 9, completion_tokens: 20, total_tokens: 29 },
};

const RESPONSE = {
  id: 'resp_1',
  object: 'response',
  created_at: 1,
  status: 'completed',
  model: 'gpt-x',
  output: [
    { id: 'msg_1', type: 'message', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: 'Checking.', annotations: [] }] },
    { id: 'fc_1', type: 'function_call', status: 'completed', call_id: 'call_a', name: 'get_weather', arguments: '{"city":"Paris"}' },
  ],
  usage: { input_tokens: 9, output_tokens: 20, total_tokens: 29, input_tokens_details: { cached_tokens: 0 }, output_tokens_details: { reasoning_tokens: 0 } },
};

describe('a stream asked for, a whole body answered', () => {
  const t = scriptedAi((host) => [
    aiRoute('/an', { name: 'an', provider: { anthropic: { model: 'claude-x' } }, hostOverride: host }, ROUTES),
    aiRoute('/oa', { name: 'oa', provider: { openAI: { model: 'gpt-x' } }, hostOverride: host }, ROUTES),
    aiRoute('/ge', { name: 'ge', provider: { gemini: { model: 'gemini-x' } }, hostOverride: host }, ROUTES),
    aiRoute('/guarded', { name: 'guarded', provider: { openAI: { model: 'gpt-x' } }, hostOverride: host }, { testAi: { ...ROUTES.testAi, rejectResponseWord: 'REJECTME' } }),
  ]);
  const clients = sdkClients(() => t.gw.base, 'sk-test');
  const ask = { model: 'any', messages: [{ role: 'user' as const, content: 'weather and time?' }] };
  const calls = (c: OpenAI.Chat.Completions.ChatCompletion): unknown[] =>
    ((c.choices[0]!.message.tool_calls ?? []) as OpenAI.Chat.Completions.ChatCompletionMessageFunctionToolCall[]).map((x) => [x.id, x.function.name, JSON.parse(x.function.arguments)]);
  const tools = (m: Anthropic.Message): unknown[] => m.content.filter((b) => b.type === 'tool_use').map((b) => [b.id, b.name, b.input]);
  /** The answers' two calls, by the id prefix of the provider that made them. */
  const twoCalls = (prefix: 'toolu' | 'call'): unknown[] => [
    [`${prefix}_a`, 'get_weather', { city: 'Paris' }],
    [`${prefix}_b`, 'get_time', {}],
  ];

  it('OpenAI client on Anthropic (translated): a Chat Completions stream with the text, the calls, the usage', async () => {
    t.answer('application/json', JSON.stringify(MESSAGE));
    const done = await clients.openai('/an').chat.completions.stream(ask).finalChatCompletion();
    assert.equal(done.choices[0]!.message.content, 'Checking.');
    assert.deepEqual(calls(done), twoCalls('toolu'));
    assert.equal(done.choices[0]!.finish_reason, 'tool_calls');
    assert.deepEqual(done.usage, { prompt_tokens: 9, completion_tokens: 20, total_tokens: 29 });
  });

  it('Anthropic client on OpenAI (translated): a Messages stream with the text, the calls, the stop reason, the usage', async () => {
    t.answer('application/json', JSON.stringify(COMPLETION));
    const done = await clients.anthropic('/oa').messages.stream({ ...ask, max_tokens: 100 }).finalMessage();
    assert.deepEqual(done.content.filter((b) => b.type === 'text').map((b) => b.text), ['Checking.']);
    assert.deepEqual(tools(done), twoCalls('call'));
    assert.equal(done.stop_reason, 'tool_use');
    assert.deepEqual(done.usage, { input_tokens: 9, output_tokens: 20 });
  });

  it('Responses client on Anthropic (translated): response.* events the SDK completes', async () => {
    t.answer('application/json', JSON.stringify(MESSAGE));
    const done = await clients.openai('/an').responses.stream({ model: 'any', input: 'weather?' }).finalResponse();
    assert.equal(done.status, 'completed');
    assert.equal(done.output_text, 'Checking.');
    assert.deepEqual(
      done.output.filter((i) => i.type === 'function_call').map((i) => [i.call_id, i.name, JSON.parse(i.arguments)]),
      twoCalls('toolu'),
    );
    assert.equal(done.usage?.output_tokens, 20);
  });

  it('same API both sides: each SDK gets its own stream of the answer, every block kept', async () => {
    t.answer('application/json', JSON.stringify(COMPLETION));
    const chat = await clients.openai('/oa').chat.completions.stream(ask).finalChatCompletion();
    assert.equal(chat.choices[0]!.message.content, 'Checking.');
    assert.deepEqual(calls(chat), twoCalls('call'));
    assert.deepEqual(chat.usage, COMPLETION.usage);

    t.answer('application/json', JSON.stringify(MESSAGE));
    const message = await clients.anthropic('/an').messages.stream({ ...ask, max_tokens: 100 }).finalMessage();
    assert.deepEqual(message.content, MESSAGE.content);
    assert.equal(message.stop_reason, 'tool_use');
    assert.deepEqual(message.usage, MESSAGE.usage);

    t.answer('application/json', JSON.stringify(RESPONSE));
    const response = await clients.openai('/oa').responses.stream({ model: 'any', input: 'weather?' }).finalResponse();
    assert.equal(response.id, 'resp_1');
    assert.equal(response.output_text, 'Checking.');
    // The SDK adds its `parsed` members to what the events said.
    assert.deepEqual(JSON.parse(JSON.stringify(response.output, (k, v: unknown) => (k.startsWith('parsed') ? undefined : v))), RESPONSE.output);
    assert.deepEqual(response.usage, RESPONSE.usage);
  });

  it('the raw answer is an event stream, whatever the provider labelled its body', async () => {
    t.answer('application/json', JSON.stringify(COMPLETION));
    const res = await fetch(`${t.gw.base}/oa/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': 'k', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ ...ask, max_tokens: 100, stream: true }),
    });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream/);
    const text = await res.text();
    assert.match(text, /^event: message_start\n/);
    assert.match(text, /event: message_stop\n/);
  });

  it('a Gemini client: the answer as one `data:` event of its `alt=sse` stream', async () => {
    const answer = { candidates: [{ content: { role: 'model', parts: [{ text: 'Hi' }] }, finishReason: 'STOP', index: 0 }], usageMetadata: { promptTokenCount: 3, candidatesTokenCount: 1, totalTokenCount: 4 }, modelVersion: 'gemini-x' };
    t.answer('application/json', JSON.stringify(answer));
    const res = await fetch(`${t.gw.base}/ge/v1beta/models/gemini-x:streamGenerateContent?alt=sse`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-goog-api-key': 'k' },
      body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'hi' }] }] }),
    });
    assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream/);
    assert.equal(await res.text(), `data: ${JSON.stringify(answer)}\n\n`);
  });

  it('response guards see the whole answer before any of it is streamed', async () => {
    t.answer('application/json', JSON.stringify({ ...COMPLETION, choices: [{ index: 0, message: { role: 'assistant', content: 'REJECTME' }, finish_reason: 'stop' }] }));
    const res = await fetch(`${t.gw.base}/guarded/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ...ask, stream: true }) });
    assert.equal(res.status, 403);
    assert.doesNotMatch(await res.text(), /REJECTME/);
  });

  it('a body that is no JSON answer still reaches a client of the same API as it came', async () => {
    // A provider streaming under the wrong content type: the bytes are not made into anything else.
    const stream = `data: ${JSON.stringify({ ...COMPLETION, object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: 'Hi' }, finish_reason: 'stop' }] })}\n\ndata: [DONE]\n\n`;
    t.answer('text/plain', stream);
    const res = await fetch(`${t.gw.base}/oa/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ...ask, stream: true }) });
    assert.equal(res.status, 200);
    assert.equal(await res.text(), stream);
  });
});
