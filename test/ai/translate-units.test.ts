// Units of plugins/lib/llm: the AWS event-stream decoder (the SSE parser is the SDK's, kernel/sdk/sse.test.ts), the format translators and usage.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { completionsResponseToMessages, messagesResponseToCompletions } from '../../plugins/lib/llm/completions-messages/answers.ts';
import { completionsRequestToMessages, messagesRequestToCompletions } from '../../plugins/lib/llm/completions-messages/requests.ts';
import { CompletionsToMessagesStream, MessagesToCompletionsStream } from '../../plugins/lib/llm/completions-messages/streams.ts';
import { completionsRequestToConverse, converseFormat, converseResponseToCompletions, usageFromConverse } from '../../plugins/llm-providers/bedrock/converse.ts';
import { encodeEventStreamMessage, EventStreamDecoder } from '../../plugins/lib/llm/event-stream.ts';
import { DONE } from '../../plugins/lib/llm/events.ts';
import type { LlmEvent } from '../../plugins/lib/llm/events.ts';
import { parseUpstreamError } from '../../plugins/lib/llm/errors.ts';
import { translation } from '../../plugins/lib/llm/translate.ts';
import { canonicalExtra } from '../../plugins/lib/llm/chat-messages.ts';
import { usageFromMessages } from '../../plugins/lib/llm/usage.ts';
import { parseHostOverride } from '../../plugins/backends/ai/host-override.ts';

describe('EventStreamDecoder', () => {
  const frame = (type: string, payload: unknown): Buffer =>
    encodeEventStreamMessage({ ':event-type': type, ':content-type': 'application/json', ':message-type': 'event' }, Buffer.from(JSON.stringify(payload)));

  it('decodes messages split anywhere', () => {
    const all = Buffer.concat([frame('messageStart', { role: 'assistant' }), frame('contentBlockDelta', { delta: { text: 'hi' }, contentBlockIndex: 0 })]);
    const d = new EventStreamDecoder();
    const out = [];
    for (let i = 0; i < all.length; i += 5) out.push(...d.feed(all.subarray(i, i + 5)));
    assert.deepEqual(
      out.map((m) => [m.headers[':event-type'], JSON.parse(m.payload.toString())]),
      [
        ['messageStart', { role: 'assistant' }],
        ['contentBlockDelta', { delta: { text: 'hi' }, contentBlockIndex: 0 }],
      ],
    );
    assert.equal(d.pending, false);
  });

  it('rejects a corrupted message', () => {
    const f = frame('messageStop', { stopReason: 'end_turn' });
    f[f.length - 6] ^= 0xff;
    assert.throws(() => new EventStreamDecoder().feed(f), /checksum/);
  });
});

describe('Chat Completions ↔ Messages', () => {
  it('moves system messages, merges tool results, converts images and tool choice', () => {
    const out = completionsRequestToMessages({
      model: 'm',
      messages: [
        { role: 'system', content: 'a' },
        { role: 'developer', content: [{ type: 'text', text: 'b' }] },
        { role: 'user', content: [{ type: 'text', text: 'look' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } }] },
        { role: 'assistant', content: 'calling', tool_calls: [{ id: 't1', type: 'function', function: { name: 'f', arguments: '{"a":1}' } }, { id: 't2', type: 'function', function: { name: 'g', arguments: 'not json' } }] },
        { role: 'tool', tool_call_id: 't1', content: 'r1' },
        { role: 'tool', tool_call_id: 't2', content: [{ type: 'text', text: 'r2' }] },
      ],
      tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }],
      tool_choice: { type: 'function', function: { name: 'f' } },
      parallel_tool_calls: false,
      max_completion_tokens: 9,
      user: 'u1',
    });
    assert.equal(out.system, 'a\nb');
    assert.deepEqual(out.messages, [
      { role: 'user', content: [{ type: 'text', text: 'look' }, { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA' } }] },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'calling' },
          { type: 'tool_use', id: 't1', name: 'f', input: { a: 1 } },
          { type: 'tool_use', id: 't2', name: 'g', input: { arguments: 'not json' } },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 't1', content: 'r1' },
          { type: 'tool_result', tool_use_id: 't2', content: 'r2' },
        ],
      },
    ]);
    assert.deepEqual(out.tool_choice, { type: 'tool', name: 'f', disable_parallel_tool_use: true });
    assert.equal(out.max_tokens, 9);
    assert.deepEqual(out.metadata, { user_id: 'u1' });
  });

  it('sends no blank text block (Anthropic refuses them): empty text parts dropped, a blank tool result without content', () => {
    const out = completionsRequestToMessages({
      model: 'm',
      messages: [
        { role: 'user', content: [{ type: 'text', text: '' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } }] },
        { role: 'assistant', content: null, tool_calls: [{ id: 't1', type: 'function', function: { name: 'f', arguments: '{}' } }, { id: 't2', type: 'function', function: { name: 'g', arguments: '{}' } }] },
        { role: 'tool', tool_call_id: 't1', content: '' },
        { role: 'tool', tool_call_id: 't2', content: ' \n' },
      ],
    });
    assert.deepEqual(out.messages, [
      { role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA' } }] },
      { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'f', input: {} }, { type: 'tool_use', id: 't2', name: 'g', input: {} }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1' }, { type: 'tool_result', tool_use_id: 't2' }] },
    ]);
  });

  it('maps stop reasons and usage (cache reads count as input)', () => {
    const c = messagesResponseToCompletions({ id: 'msg', model: 'm', content: [{ type: 'text', text: 'x' }], stop_reason: 'max_tokens', usage: { input_tokens: 3, cache_read_input_tokens: 4, output_tokens: 2 } });
    assert.equal(c.choices[0].finish_reason, 'length');
    assert.deepEqual(c.usage, { prompt_tokens: 7, completion_tokens: 2, total_tokens: 9, prompt_tokens_details: { cached_tokens: 4 } });
    const m = completionsResponseToMessages({ id: 'c', model: 'm', choices: [{ message: { content: null, tool_calls: [{ id: 'x', function: { name: 'f', arguments: '{}' } }] }, finish_reason: 'tool_calls' }], usage: { prompt_tokens: 7, completion_tokens: 2, prompt_tokens_details: { cached_tokens: 4 } } });
    assert.equal(m.stop_reason, 'tool_use');
    assert.deepEqual(m.content, [{ type: 'tool_use', id: 'x', name: 'f', input: {} }]);
    assert.deepEqual(m.usage, { input_tokens: 3, output_tokens: 2, cache_read_input_tokens: 4 });
  });

  it("a tool result's images (OpenAI tool messages carry text only) follow the tool messages in a user turn", () => {
    const out = messagesRequestToCompletions({
      model: 'm',
      max_tokens: 5,
      messages: [
        { role: 'user', content: 'screenshot please' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'shot', input: {} }, { type: 'tool_use', id: 't2', name: 'read', input: {} }] },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 't1', content: [{ type: 'text', text: 'taken' }, { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA' } }] },
            { type: 'tool_result', tool_use_id: 't2', content: [{ type: 'image', source: { type: 'url', url: 'https://x.test/a.png' } }] },
            { type: 'text', text: 'what do you see?' },
          ],
        },
      ],
    });
    assert.deepEqual(out.messages.slice(2), [
      { role: 'tool', tool_call_id: 't1', content: 'taken' },
      { role: 'tool', tool_call_id: 't2', content: '' },
      {
        role: 'user',
        content: [
          { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
          { type: 'image_url', image_url: { url: 'https://x.test/a.png' } },
          { type: 'text', text: 'what do you see?' },
        ],
      },
    ]);
  });

  it('an OpenAI file part with PDF data becomes an Anthropic document', () => {
    const out = completionsRequestToMessages({
      model: 'm',
      messages: [{ role: 'user', content: [{ type: 'file', file: { file_data: 'data:application/pdf;base64,JVBERi0=', filename: 'report.pdf' } }, { type: 'text', text: 'summarise' }] }],
    });
    assert.deepEqual(out.messages, [
      {
        role: 'user',
        content: [
          { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'JVBERi0=' }, title: 'report.pdf' },
          { type: 'text', text: 'summarise' },
        ],
      },
    ]);
  });

  it('Anthropic documents become file parts (PDF data) or text (plain-text documents)', () => {
    const out = messagesRequestToCompletions({
      model: 'm',
      max_tokens: 5,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'JVBERi0=' }, title: 'report.pdf' },
            { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'plain notes' } },
            { type: 'text', text: 'summarise both' },
          ],
        },
      ],
    });
    assert.deepEqual(out.messages, [
      {
        role: 'user',
        content: [
          { type: 'file', file: { file_data: 'data:application/pdf;base64,JVBERi0=', filename: 'report.pdf' } },
          { type: 'text', text: 'plain notes' },
          { type: 'text', text: 'summarise both' },
        ],
      },
    ]);
  });

  it('translates an Anthropic request with array system, images and tool results', () => {
    const out = messagesRequestToCompletions({
      model: 'm',
      max_tokens: 5,
      system: [{ type: 'text', text: 's1' }, { type: 'text', text: 's2' }],
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'see' }, { type: 'image', source: { type: 'base64', media_type: 'image/jpeg', data: 'BBBB' } }] },
        { role: 'assistant', content: [{ type: 'thinking', thinking: 'hmm' }, { type: 'tool_use', id: 't', name: 'f', input: { q: 1 } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't', content: [{ type: 'text', text: 'ok' }] }, { type: 'text', text: 'thanks' }] },
      ],
      tools: [{ name: 'f', input_schema: { type: 'object' } }, { type: 'web_search_20250305', name: 'web_search' }],
      tool_choice: { type: 'any', disable_parallel_tool_use: true },
      stream: true,
    });
    // What is sent as JSON (a thinking block rides beside the message for the APIs that take one: ADR 0167).
    assert.deepEqual(JSON.parse(JSON.stringify(out.messages)), [
      { role: 'system', content: 's1\ns2' },
      { role: 'user', content: [{ type: 'text', text: 'see' }, { type: 'image_url', image_url: { url: 'data:image/jpeg;base64,BBBB' } }] },
      { role: 'assistant', content: null, tool_calls: [{ id: 't', type: 'function', function: { name: 'f', arguments: '{"q":1}' } }] },
      { role: 'tool', tool_call_id: 't', content: 'ok' },
      { role: 'user', content: 'thanks' },
    ]);
    assert.deepEqual(canonicalExtra(out.messages[2], 'thinking'), [{ type: 'thinking', thinking: 'hmm' }]);
    assert.equal(out.tools.length, 1, 'server tools have no Chat Completions form');
    assert.equal(out.tool_choice, 'required');
    assert.equal(out.parallel_tool_calls, false);
    assert.deepEqual(out.stream_options, { include_usage: true });
  });

  const run = (t: { event(e: LlmEvent): LlmEvent[]; end(): LlmEvent[] }, events: LlmEvent[]): LlmEvent[] => [...events.flatMap((e) => t.event(e)), ...t.end()];

  it('streams Messages events as chunks with the usage chunk and [DONE] last', () => {
    const ev = (type: string, data: Record<string, unknown>): LlmEvent => ({ type, data: { type, ...data } });
    const out = run(new MessagesToCompletionsStream(), [
      ev('message_start', { message: { id: 'm1', model: 'claude', usage: { input_tokens: 5, output_tokens: 1 } } }),
      ev('content_block_start', { index: 0, content_block: { type: 'tool_use', id: 'tu', name: 'f', input: {} } }),
      ev('content_block_delta', { index: 0, delta: { type: 'input_json_delta', partial_json: '{"a"' } }),
      ev('content_block_delta', { index: 0, delta: { type: 'input_json_delta', partial_json: ':1}' } }),
      ev('message_delta', { delta: { stop_reason: 'tool_use' }, usage: { output_tokens: 4 } }),
      ev('message_stop', {}),
    ]);
    assert.equal(out[out.length - 1], DONE);
    const deltas = out.slice(0, -1).map((e) => e.data.choices[0]?.delta);
    assert.deepEqual(deltas[1], { tool_calls: [{ index: 0, id: 'tu', type: 'function', function: { name: 'f', arguments: '' } }] });
    assert.equal(deltas.flatMap((d) => d?.tool_calls ?? []).map((t: { function: { arguments: string } }) => t.function.arguments).join(''), '{"a":1}');
    assert.equal(out[out.length - 3]!.data.choices[0].finish_reason, 'tool_calls');
    assert.deepEqual(out[out.length - 2]!.data.usage, { prompt_tokens: 5, completion_tokens: 4, total_tokens: 9 });
  });

  it('streams chunks as Messages events, closing blocks between text and tool calls', () => {
    const chunk = (delta: Record<string, unknown>, finish: string | null = null, usage?: unknown): LlmEvent => ({ type: undefined, data: { id: 'c', model: 'gpt', choices: [{ index: 0, delta, finish_reason: finish }], ...(usage ? { usage } : {}) } });
    const out = run(new CompletionsToMessagesStream(), [
      chunk({ role: 'assistant', content: '' }),
      chunk({ content: 'Hi' }),
      chunk({ tool_calls: [{ index: 0, id: 'c1', function: { name: 'f', arguments: '' } }] }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: '{}' } }] }),
      chunk({}, 'tool_calls'),
      { type: undefined, data: { id: 'c', choices: [], usage: { prompt_tokens: 3, completion_tokens: 2 } } },
      DONE,
    ]);
    assert.deepEqual(
      out.map((e) => e.type),
      ['message_start', 'content_block_start', 'content_block_delta', 'content_block_stop', 'content_block_start', 'content_block_delta', 'content_block_stop', 'message_delta', 'message_stop'],
    );
    assert.deepEqual(out[7]!.data, { type: 'message_delta', delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { input_tokens: 3, output_tokens: 2 } });
  });

  it('holds later parallel calls only up to 32 MiB: past it an error event, and the translator halts', () => {
    const t = new CompletionsToMessagesStream();
    const call = (index: number, args: string, id?: string): LlmEvent => ({ type: undefined, data: { id: 'c', choices: [{ index: 0, delta: { tool_calls: [{ index, ...(id ? { id } : {}), function: { name: 'f', arguments: args } }] } }] } });
    t.event(call(0, '', 'a'));
    t.event(call(1, '', 'b'));
    const piece = 'x'.repeat(8 * 1024 * 1024);
    for (let i = 0; i < 4; i++) assert.ok(!t.event(call(1, piece)).some((e) => e.type === 'error'));
    assert.equal(t.halted, false);
    const out = t.event(call(1, 'y'));
    assert.equal(out.at(-1)!.type, 'error');
    assert.equal(t.halted, true);
    assert.deepEqual(t.event(call(0, 'z')), []);
  });

  it('does not finish a stream cut before its finish reason', () => {
    const t = new CompletionsToMessagesStream();
    const out = run(t, [{ type: undefined, data: { id: 'c', choices: [{ index: 0, delta: { content: 'partial' } }] } }]);
    assert.ok(!out.some((e) => e.type === 'message_stop'));
  });
});

describe('Converse', () => {
  it('builds a Converse request: roles alternate, tool results in user turns, images as bytes', () => {
    const out = completionsRequestToConverse({
      model: 'x',
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'a' }, { type: 'image_url', image_url: { url: 'data:image/jpeg;base64,QQ==' } }] },
        { role: 'assistant', content: null, tool_calls: [{ id: 't', function: { name: 'f', arguments: '{"k":"v"}' } }] },
        { role: 'tool', tool_call_id: 't', content: 'done' },
        { role: 'user', content: 'next' },
      ],
      stop: ['x'],
      tool_choice: 'none',
      tools: [{ type: 'function', function: { name: 'f' } }],
    });
    assert.deepEqual(out.messages, [
      { role: 'user', content: [{ text: 'a' }, { image: { format: 'jpeg', source: { bytes: 'QQ==' } } }] },
      { role: 'assistant', content: [{ toolUse: { toolUseId: 't', name: 'f', input: { k: 'v' } } }] },
      { role: 'user', content: [{ toolResult: { toolUseId: 't', content: [{ text: 'done' }] } }, { text: 'next' }] },
    ]);
    assert.deepEqual(out.inferenceConfig, { stopSequences: ['x'] });
    assert.equal(out.toolConfig.toolChoice, undefined);
    assert.equal(out.model, undefined, 'the model goes in the path');
  });

  /** A user turn, an assistant turn calling `calls` (name, arguments) as t1, t2, …, and their `results`. */
  const toolHistory = (calls: [string, string][], results: unknown[]): Record<string, unknown>[] => [
    { role: 'user', content: 'go' },
    { role: 'assistant', content: null, tool_calls: calls.map(([name, args], i) => ({ id: `t${i + 1}`, function: { name, arguments: args } })) },
    ...results.map((content, i) => ({ role: 'tool', tool_call_id: `t${i + 1}`, content })),
  ];

  it('an empty or blank tool result is sent as a placeholder: Converse refuses blank text blocks', () => {
    const out = completionsRequestToConverse({ model: 'x', messages: toolHistory([['f', '{}'], ['g', '{}']], ['', [{ type: 'text', text: ' \n' }]]) });
    assert.deepEqual(out.messages[2], {
      role: 'user',
      content: [{ toolResult: { toolUseId: 't1', content: [{ text: '(no output)' }] } }, { toolResult: { toolUseId: 't2', content: [{ text: '(no output)' }] } }],
    });
  });

  it('a history with tool calls and no tools in the request still declares them: Converse refuses tool blocks without toolConfig', () => {
    const history = toolHistory([['get_weather', '{"city":"Paris"}'], ['get_weather', '{"city":"Rome"}']], ['sunny', 'rain']);
    const out = completionsRequestToConverse({ model: 'x', messages: [...history, { role: 'user', content: 'sum it up' }] });
    assert.deepEqual(out.toolConfig, { tools: [{ toolSpec: { name: 'get_weather', inputSchema: { json: { type: 'object' } } } }] });
    assert.equal(completionsRequestToConverse({ model: 'x', messages: [{ role: 'user', content: 'hi' }] }).toolConfig, undefined);
  });

  it('reads a Converse response', () => {
    const c = converseResponseToCompletions({ output: { message: { role: 'assistant', content: [{ text: 'a' }, { text: 'b' }] } }, stopReason: 'guardrail_intervened', usage: { inputTokens: 2, outputTokens: 3, cacheReadInputTokens: 1 } }, 'mdl');
    assert.equal(c.model, 'mdl');
    assert.equal(c.choices[0].message.content, 'ab');
    assert.equal(c.choices[0].finish_reason, 'content_filter');
    assert.deepEqual(c.usage, { prompt_tokens: 3, completion_tokens: 3, total_tokens: 6, prompt_tokens_details: { cached_tokens: 1 } });
  });

  it('chains Messages → Chat Completions → Converse both ways', () => {
    const t = translation('messages', 'converse', [converseFormat])!;
    assert.equal(t.identity, false);
    assert.deepEqual(t.request({ model: 'm', max_tokens: 7, system: 's', messages: [{ role: 'user', content: 'q' }] }), {
      messages: [{ role: 'user', content: [{ text: 'q' }] }],
      system: [{ text: 's' }],
      inferenceConfig: { maxTokens: 7 },
    });
    const back = t.response({ output: { message: { content: [{ text: 'ans' }] } }, stopReason: 'end_turn', usage: { inputTokens: 1, outputTokens: 2 } }, 'm');
    assert.equal(back.type, 'message');
    assert.deepEqual(back.content, [{ type: 'text', text: 'ans' }]);
    assert.deepEqual(back.usage, { input_tokens: 1, output_tokens: 2 });
    const s = t.stream('m');
    const events = [
      { type: 'messageStart', data: { role: 'assistant' } },
      { type: 'contentBlockDelta', data: { contentBlockIndex: 0, delta: { text: 'ans' } } },
      { type: 'messageStop', data: { stopReason: 'end_turn' } },
      { type: 'metadata', data: { usage: { inputTokens: 1, outputTokens: 2 } } },
    ].flatMap((e) => s.event(e));
    assert.deepEqual(
      events.map((e) => e.type),
      ['message_start', 'content_block_start', 'content_block_delta', 'content_block_stop', 'message_delta', 'message_stop'],
    );
    assert.equal(translation('completions', 'completions')!.identity, true);
  });
});

describe('usage, errors, hostOverride', () => {
  it('normalises input tokens to include cache reads and writes', () => {
    assert.deepEqual(usageFromMessages({ input_tokens: 1, cache_read_input_tokens: 2, cache_creation_input_tokens: 3, output_tokens: 4 }), {
      inputTokens: 6,
      outputTokens: 4,
      cachedInputTokens: 2,
      cacheCreationInputTokens: 3,
    });
    assert.equal(usageFromConverse({ inputTokens: 5, cacheWriteInputTokens: 1, outputTokens: 0 })!.inputTokens, 6);
  });

  it('reads error bodies of every provider', () => {
    assert.deepEqual(parseUpstreamError('{"error":{"message":"m","type":"t"}}'), { type: 't', message: 'm' });
    assert.deepEqual(parseUpstreamError('{"type":"error","error":{"type":"overloaded_error","message":"busy"}}'), { type: 'overloaded_error', message: 'busy' });
    assert.deepEqual(parseUpstreamError('{"message":"Too many requests"}', { 'x-amzn-errortype': 'ThrottlingException:http://internal' }), { type: 'ThrottlingException', message: 'Too many requests' });
    assert.deepEqual(parseUpstreamError('[{"error":{"code":429,"message":"quota","status":"RESOURCE_EXHAUSTED"}}]'), { type: 'RESOURCE_EXHAUSTED', message: 'quota' });
    assert.deepEqual(parseUpstreamError('plain text'), { message: 'plain text' });
  });

  it('parses hostOverride values', () => {
    assert.deepEqual(parseHostOverride('127.0.0.1:4010', false), { secure: false, origin: 'http://127.0.0.1:4010' });
    assert.deepEqual(parseHostOverride('llm.internal', true), { secure: true, origin: 'https://llm.internal:443' });
    assert.deepEqual(parseHostOverride('https://llm.internal:8443/', false), { secure: true, origin: 'https://llm.internal:8443' });
    assert.deepEqual(parseHostOverride('[::1]:9000', false), { secure: false, origin: 'http://[::1]:9000' });
    assert.equal(typeof parseHostOverride('a b', false), 'string');
    assert.equal(typeof parseHostOverride('h:70000', false), 'string');
  });
});
