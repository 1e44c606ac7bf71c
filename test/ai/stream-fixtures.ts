// Provider streams scripted for the translation tests: SSE and AWS event-stream framing, and an Anthropic answer
// with text, a tool call whose input arrives in pieces and one without input.
import { encodeEventStreamMessage } from '../../plugins/lib/llm/event-stream.ts';

/** One SSE event (`event:` line when named). */
export const sse = (event: string | undefined, data: unknown): string => `${event ? `event: ${event}\n` : ''}data: ${JSON.stringify(data)}\n\n`;

/** One AWS event-stream message (Bedrock's `converse-stream`). */
export const frame = (type: string, payload: unknown): Buffer =>
  encodeEventStreamMessage({ ':event-type': type, ':content-type': 'application/json', ':message-type': 'event' }, Buffer.from(JSON.stringify(payload)));

/**
 * A Converse stream: the text `Checking.`, then `get_weather` with its input in two pieces and `get_time` with none
 * (no delta at all), stop reason `tool_use`, then `usage` in the metadata event.
 */
export const converseTools = (usage: Record<string, number>): Buffer =>
  Buffer.concat([
    frame('messageStart', { role: 'assistant' }),
    frame('contentBlockDelta', { contentBlockIndex: 0, delta: { text: 'Checking.' } }),
    frame('contentBlockStop', { contentBlockIndex: 0 }),
    frame('contentBlockStart', { contentBlockIndex: 1, start: { toolUse: { toolUseId: 'tooluse_a', name: 'get_weather' } } }),
    frame('contentBlockDelta', { contentBlockIndex: 1, delta: { toolUse: { input: '{"city":' } } }),
    frame('contentBlockDelta', { contentBlockIndex: 1, delta: { toolUse: { input: '"Paris"}' } } }),
    frame('contentBlockStop', { contentBlockIndex: 1 }),
    frame('contentBlockStart', { contentBlockIndex: 2, start: { toolUse: { toolUseId: 'tooluse_b', name: 'get_time' } } }),
    frame('contentBlockStop', { contentBlockIndex: 2 }),
    frame('messageStop', { stopReason: 'tool_use' }),
    frame('metadata', { usage, metrics: { latencyMs: 5 } }),
  ]);

/** Anthropic's `message_start` of these answers (9 input tokens). */
export const MESSAGE_START = sse('message_start', { type: 'message_start', message: { id: 'msg_1', type: 'message', role: 'assistant', content: [], model: 'claude-x', usage: { input_tokens: 9, output_tokens: 1 } } });

/** An Anthropic stream: the text `Checking.`, then `get_weather` with split input and `get_time` without input. */
export const ANTHROPIC_TOOLS = [
  MESSAGE_START,
  sse('content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }),
  sse('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Check' } }),
  sse('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'ing.' } }),
  sse('content_block_stop', { type: 'content_block_stop', index: 0 }),
  sse('content_block_start', { type: 'content_block_start', index: 1, content_block: { type: 'tool_use', id: 'toolu_a', name: 'get_weather', input: {} } }),
  sse('content_block_delta', { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '{"city":' } }),
  sse('content_block_delta', { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '"Paris"}' } }),
  sse('content_block_stop', { type: 'content_block_stop', index: 1 }),
  sse('content_block_start', { type: 'content_block_start', index: 2, content_block: { type: 'tool_use', id: 'toolu_b', name: 'get_time', input: {} } }),
  sse('content_block_delta', { type: 'content_block_delta', index: 2, delta: { type: 'input_json_delta', partial_json: '' } }),
  sse('content_block_stop', { type: 'content_block_stop', index: 2 }),
  sse('message_delta', { type: 'message_delta', delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { output_tokens: 20 } }),
  sse('message_stop', { type: 'message_stop' }),
].join('');

const openaiChunk = (delta: unknown, finish: string | null = null): string =>
  sse(undefined, { id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: 'gpt-x', choices: [{ index: 0, delta, finish_reason: finish }] });

/**
 * A Chat Completions stream of parallel calls whose deltas interleave: the calls' first chunks, then their arguments
 * alternately, then text (Chat Completions puts no order between a message's text and its calls); 9 + 20 tokens.
 */
export const OPENAI_INTERLEAVED_TOOLS = [
  openaiChunk({ role: 'assistant', content: null }),
  openaiChunk({ tool_calls: [{ index: 0, id: 'call_a', type: 'function', function: { name: 'get_weather', arguments: '' } }] }),
  openaiChunk({ tool_calls: [{ index: 1, id: 'call_b', type: 'function', function: { name: 'get_time', arguments: '' } }] }),
  openaiChunk({ tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] }),
  openaiChunk({ tool_calls: [{ index: 1, function: { arguments: '{"zone":' } }] }),
  openaiChunk({ tool_calls: [{ index: 0, function: { arguments: '"Paris"}' } }] }),
  openaiChunk({ tool_calls: [{ index: 1, function: { arguments: '"CET"}' } }] }),
  openaiChunk({ content: 'Both asked.' }),
  openaiChunk({}, 'tool_calls'),
  sse(undefined, { id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: 'gpt-x', choices: [], usage: { prompt_tokens: 9, completion_tokens: 20, total_tokens: 29 } }),
  'data: [DONE]\n\n',
].join('');
