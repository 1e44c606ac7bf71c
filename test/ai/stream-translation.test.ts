// Translated streams as the real SDKs read them: an OpenAI client on Anthropic and Bedrock providers, an Anthropic
// client on an OpenAI provider. A loopback stand-in provider scripts the provider's events exactly (tool calls with
// and without arguments, several in one answer), so what the client's stream helpers put together can be checked.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { ANTHROPIC_TOOLS, converseTools, OPENAI_INTERLEAVED_TOOLS, sse } from './stream-fixtures.ts';
import { aiRoute, rejection, scriptedAi, sdkClients } from './harness.ts';

/** The same answer as a Converse stream: the tool without input has no delta at all. */
const CONVERSE_TOOLS = converseTools({ inputTokens: 9, outputTokens: 20, totalTokens: 29 });

/** Anthropic clients on `/v1/messages`, OpenAI Responses clients on `/v1/responses`, Chat Completions elsewhere. */
const MESSAGES = { testAi: { routes: { '/v1/messages': 'messages', '/v1/responses': 'responses', '*': 'completions' } } };

const chunk = (delta: unknown, finish: string | null = null): string =>
  sse(undefined, { id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: 'gpt-x', choices: [{ index: 0, delta, finish_reason: finish }] });
const usageChunk = sse(undefined, { id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: 'gpt-x', choices: [], usage: { prompt_tokens: 9, completion_tokens: 20, total_tokens: 29 } });

/**
 * OpenAI's stream of a call forced by a named `tool_choice`: the tool call, then `finish_reason: "stop"` (OpenAI's
 * own answer for named tool choices), not `tool_calls`.
 */
const OPENAI_FORCED_TOOL = [
  chunk({ role: 'assistant', content: null }),
  chunk({ tool_calls: [{ index: 0, id: 'call_a', type: 'function', function: { name: 'get_weather', arguments: '' } }] }),
  chunk({ tool_calls: [{ index: 0, function: { arguments: '{"city":"Paris"}' } }] }),
  chunk({}, 'stop'),
  usageChunk,
  'data: [DONE]\n\n',
].join('');

/**
 * Gemini's OpenAI-compatible API: parallel calls each whole in one chunk, with no `index`, and `finish_reason: "stop"`.
 */
const GEMINI_COMPAT_TOOLS = [
  chunk({ role: 'assistant', tool_calls: [{ id: 'function-call-1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] }),
  chunk({ role: 'assistant', tool_calls: [{ id: 'function-call-2', type: 'function', function: { name: 'get_time', arguments: '{"zone":"CET"}' } }] }),
  chunk({}, 'stop'),
  usageChunk,
  'data: [DONE]\n\n',
].join('');

/**
 * Azure OpenAI's stream: a first chunk with no choices, an empty id and model, carrying only the prompt's content
 * filter results; then OpenAI's chunks.
 */
const AZURE_TEXT = [
  sse(undefined, { choices: [], created: 0, id: '', model: '', object: '', prompt_filter_results: [{ prompt_index: 0, content_filter_results: { hate: { filtered: false, severity: 'safe' } } }] }),
  chunk({ role: 'assistant', content: '' }),
  chunk({ content: 'Hi' }),
  chunk({}, 'stop'),
  usageChunk,
  'data: [DONE]\n\n',
].join('');

/** Anthropic's rules for a message's events: one block at a time, each started, its deltas, stopped; indexes in order. */
function assertBlockOrder(events: readonly { type: string; index?: number }[]): void {
  let open: number | undefined;
  let next = 0;
  for (const e of events) {
    if (e.type === 'content_block_start') {
      assert.equal(open, undefined, `block ${e.index} started while ${open} is open`);
      assert.equal(e.index, next++, 'blocks are numbered in order');
      open = e.index;
    } else if (e.type === 'content_block_delta') {
      assert.equal(e.index, open, `delta for block ${e.index} while ${open} is open`);
    } else if (e.type === 'content_block_stop') {
      assert.equal(e.index, open, `stop for block ${e.index} while ${open} is open`);
      open = undefined;
    } else if (e.type === 'message_delta' || e.type === 'message_stop') {
      assert.equal(open, undefined, `${e.type} while block ${open} is open`);
    }
  }
}

describe('translated streams read by the SDKs', () => {
  const t = scriptedAi((host) => [
    aiRoute('/an', { name: 'an', provider: { anthropic: { model: 'claude-x' } }, hostOverride: host }),
    aiRoute('/br', { name: 'br', provider: { bedrock: { model: 'anthropic.claude-x', region: 'us-east-1' } }, hostOverride: host }, { backendAuth: { key: 'k' } }),
    aiRoute('/oa', { name: 'oa', provider: { openAI: { model: 'gpt-x' } }, hostOverride: host }, MESSAGES),
    aiRoute('/az', { name: 'az', provider: { azureOpenAI: { host: 'example.openai.azure.com', model: 'gpt-4o-deploy' } }, hostOverride: host }, MESSAGES),
    aiRoute('/gc', { name: 'gc', provider: { gemini: { model: 'gemini-x', openAICompatible: true } }, hostOverride: host }, MESSAGES),
  ]);
  const clients = sdkClients(() => t.gw.base, 'sk-test');
  const ask = { model: 'any', messages: [{ role: 'user' as const, content: 'weather and time?' }] };

  const expectTools = (done: OpenAI.Chat.Completions.ChatCompletion, ids: [string, string]): void => {
    const choice = done.choices[0]!;
    assert.equal(choice.finish_reason, 'tool_calls');
    assert.equal(choice.message.content, 'Checking.');
    const calls = (choice.message.tool_calls ?? []) as OpenAI.Chat.Completions.ChatCompletionMessageFunctionToolCall[];
    assert.deepEqual(
      calls.map((c) => [c.id, c.function.name, c.function.arguments]),
      [
        [ids[0], 'get_weather', '{"city":"Paris"}'],
        // A tool without arguments: `{}`, as in a complete answer (JSON.parse('') throws).
        [ids[1], 'get_time', '{}'],
      ],
    );
    for (const c of calls) JSON.parse(c.function.arguments);
    assert.deepEqual(done.usage, { prompt_tokens: 9, completion_tokens: 20, total_tokens: 29 });
  };

  it('OpenAI client on Anthropic: tool calls with and without arguments', async () => {
    t.answer('text/event-stream', ANTHROPIC_TOOLS);
    const done = await clients.openai('/an').chat.completions.stream(ask).finalChatCompletion();
    expectTools(done, ['toolu_a', 'toolu_b']);
  });

  it('OpenAI client on Anthropic: the usage chunk (choices: []) only when asked or left to the default, as OpenAI', async () => {
    const usageChunks = async (stream_options: OpenAI.Chat.Completions.ChatCompletionStreamOptions | undefined): Promise<number> => {
      t.answer('text/event-stream', ANTHROPIC_TOOLS);
      const stream = await clients.openai('/an').chat.completions.create({ ...ask, stream: true, ...(stream_options ? { stream_options } : {}) });
      let n = 0;
      for await (const c of stream) if (c.choices.length === 0 && c.usage) n++;
      return n;
    };
    assert.equal(await usageChunks({ include_usage: true }), 1);
    // No stream_options: the gateway asks for usage (BEHAVIOUR.md §4.6), as it does for an OpenAI provider.
    assert.equal(await usageChunks(undefined), 1);
    assert.equal(await usageChunks({ include_usage: false }), 0, 'the client said no usage chunk');
    assert.equal(await usageChunks({ include_obfuscation: false }), 0, 'stream_options without include_usage: none, as OpenAI');
    // A stream answered with one JSON body is streamed to the client under the same rule.
    t.answer('application/json', JSON.stringify({ id: 'msg_1', type: 'message', role: 'assistant', model: 'claude-x', content: [{ type: 'text', text: 'hi' }], stop_reason: 'end_turn', usage: { input_tokens: 3, output_tokens: 1 } }));
    const whole = await clients.openai('/an').chat.completions.create({ ...ask, stream: true, stream_options: { include_usage: false } });
    let n = 0;
    for await (const c of whole) if (c.choices.length === 0) n++;
    assert.equal(n, 0);
  });

  it('OpenAI client on Bedrock: tool calls with and without arguments', async () => {
    t.answer('application/vnd.amazon.eventstream', CONVERSE_TOOLS);
    const done = await clients.openai('/br').chat.completions.stream(ask).finalChatCompletion();
    expectTools(done, ['tooluse_a', 'tooluse_b']);
  });

  const toolsOf = (m: Anthropic.Message): unknown[] => m.content.filter((b) => b.type === 'tool_use').map((b) => [b.id, b.name, b.input]);
  const weatherTool = { name: 'get_weather', input_schema: { type: 'object' as const, properties: { city: { type: 'string' } } } };

  it('Anthropic client on OpenAI, named tool choice: OpenAI ends with "stop", the client gets stop_reason tool_use', async () => {
    t.answer('text/event-stream', OPENAI_FORCED_TOOL);
    const ask = { model: 'any', max_tokens: 100, tools: [weatherTool], tool_choice: { type: 'tool' as const, name: 'get_weather' }, messages: [{ role: 'user' as const, content: 'weather?' }] };
    const done = await clients.anthropic('/oa').messages.stream(ask).finalMessage();
    assert.equal(done.stop_reason, 'tool_use');
    assert.deepEqual(toolsOf(done), [['call_a', 'get_weather', { city: 'Paris' }]]);
    // The same answer not streamed.
    t.answer('application/json', JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion', created: 1, model: 'gpt-x', choices: [{ index: 0, message: { role: 'assistant', content: null, tool_calls: [{ id: 'call_a', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] }, finish_reason: 'stop' }], usage: { prompt_tokens: 9, completion_tokens: 20, total_tokens: 29 } }));
    const whole = await clients.anthropic('/oa').messages.create(ask);
    assert.equal(whole.stop_reason, 'tool_use');
    assert.deepEqual(toolsOf(whole), [['call_a', 'get_weather', { city: 'Paris' }]]);
  });

  it('Anthropic client on OpenAI, parallel calls whose deltas interleave: each block whole, in order, every input parsed', async () => {
    t.answer('text/event-stream', OPENAI_INTERLEAVED_TOOLS);
    const stream = clients.anthropic('/oa').messages.stream({ model: 'any', max_tokens: 100, tools: [weatherTool], messages: [{ role: 'user', content: 'weather and time?' }] });
    const events: { type: string; index?: number }[] = [];
    stream.on('streamEvent', (e) => events.push(e as { type: string; index?: number }));
    const done = await stream.finalMessage();
    assertBlockOrder(events);
    assert.deepEqual(toolsOf(done), [
      ['call_a', 'get_weather', { city: 'Paris' }],
      ['call_b', 'get_time', { zone: 'CET' }],
    ]);
    assert.deepEqual(done.content.filter((b) => b.type === 'text').map((b) => b.text), ['Both asked.']);
    assert.equal(done.stop_reason, 'tool_use');
    assert.deepEqual(done.usage, { input_tokens: 9, output_tokens: 20 });
  });

  it('Anthropic client on OpenAI: a refusal (structured outputs) is the answer text, stop_reason refusal, streamed or not', async () => {
    const refusal = "I'm sorry, I can't help with that.";
    t.answer('text/event-stream', [chunk({ role: 'assistant', content: null, refusal: '' }), chunk({ refusal: "I'm sorry, " }), chunk({ refusal: "I can't help with that." }), chunk({}, 'stop'), usageChunk, 'data: [DONE]\n\n'].join(''));
    const ask = { model: 'any', max_tokens: 100, messages: [{ role: 'user' as const, content: 'something bad' }] };
    const done = await clients.anthropic('/oa').messages.stream(ask).finalMessage();
    assert.deepEqual(done.content, [{ type: 'text', text: refusal }]);
    assert.equal(done.stop_reason, 'refusal');
    t.answer('application/json', JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion', created: 1, model: 'gpt-x', choices: [{ index: 0, message: { role: 'assistant', content: null, refusal }, finish_reason: 'stop' }], usage: { prompt_tokens: 9, completion_tokens: 20, total_tokens: 29 } }));
    const whole = await clients.anthropic('/oa').messages.create(ask);
    assert.deepEqual(whole.content, [{ type: 'text', text: refusal }]);
    assert.equal(whole.stop_reason, 'refusal');
  });

  it("Anthropic client on Gemini's OpenAI-compatible API: parallel calls without an index stay two calls", async () => {
    t.answer('text/event-stream', GEMINI_COMPAT_TOOLS);
    const done = await clients.anthropic('/gc').messages.stream({ model: 'any', max_tokens: 100, tools: [weatherTool], messages: [{ role: 'user', content: 'weather and time?' }] }).finalMessage();
    assert.deepEqual(toolsOf(done), [
      ['function-call-1', 'get_weather', { city: 'Paris' }],
      ['function-call-2', 'get_time', { zone: 'CET' }],
    ]);
    assert.equal(done.stop_reason, 'tool_use');
    assert.deepEqual(done.usage, { input_tokens: 9, output_tokens: 20 });
  });

  it("Anthropic client on Azure OpenAI: the filter-results chunk before the answer does not name the message", async () => {
    t.answer('text/event-stream', AZURE_TEXT);
    const done = await clients.anthropic('/az').messages.stream({ model: 'any', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] }).finalMessage();
    assert.equal(done.id, 'chatcmpl-1');
    assert.equal(done.model, 'gpt-x');
    assert.deepEqual(done.content, [{ type: 'text', text: 'Hi' }]);
    assert.equal(done.stop_reason, 'end_turn');
  });

  it("an OpenAI-compatible provider's error in a 200 body (OpenRouter) is an error for a translated client, not an empty answer", async () => {
    // OpenRouter: an error after the model was picked comes back 200, `{"error":{"code":...,"message":...}}`.
    t.answer('application/json', JSON.stringify({ error: { code: 502, message: 'upstream model is down', metadata: { provider_name: 'x' } } }));
    const ask = { model: 'any', max_tokens: 100, messages: [{ role: 'user' as const, content: 'hi' }] };
    const err = await rejection(clients.anthropic('/oa').messages.create(ask), Anthropic.APIError);
    assert.equal(err.status, 502);
    assert.match(err.message, /upstream model is down/);
    // Asked as a stream: the same error, before any event.
    const streamed = await rejection(clients.anthropic('/oa').messages.stream(ask).finalMessage(), Anthropic.APIError);
    assert.equal(streamed.status, 502);
    // A code that is no HTTP status: 502.
    t.answer('application/json', JSON.stringify({ error: { code: 'server_error', message: 'boom' } }));
    assert.equal((await rejection(clients.openai('/gc').responses.create({ model: 'any', input: 'hi' }), OpenAI.APIError)).status, 502);
  });

  it("an Anthropic provider's error in a 200 body is an error for a translated client (its type's status), not an empty answer", async () => {
    // Seen from proxies in front of Anthropic: `{"type":"error",...}` with 200. It was an empty `stop` completion.
    t.answer('application/json', JSON.stringify({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }));
    const ask = { model: 'claude-x', messages: [{ role: 'user' as const, content: 'hi' }] };
    const err = await rejection(clients.openai('/an').chat.completions.create(ask), OpenAI.APIError);
    assert.equal(err.status, 529);
    assert.match(err.message, /Overloaded/);
    const streamed = await rejection(clients.openai('/an').chat.completions.create({ ...ask, stream: true }), OpenAI.APIError);
    assert.equal(streamed.status, 529);
    // A type that names no status: 502.
    t.answer('application/json', JSON.stringify({ type: 'error', error: { type: 'something_new', message: 'boom' } }));
    assert.equal((await rejection(clients.openai('/an').chat.completions.create(ask), OpenAI.APIError)).status, 502);
  });

  it('a provider error whose body is too large to translate keeps its status for the client (not a 502)', async () => {
    // Past the 1 MiB read to translate it: the client still learns it was rate limited.
    t.answer('application/json', JSON.stringify({ type: 'error', error: { type: 'rate_limit_error', message: 'x'.repeat(2 * 1024 * 1024) } }), 429);
    const err = await clients.openai('/an').chat.completions.create({ model: 'claude-x', messages: [{ role: 'user', content: 'hi' }] }).then(
      () => assert.fail('the call succeeded'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof OpenAI.RateLimitError, String(err));
    assert.ok(String((err as Error).message).length < 1000);
  });
});

