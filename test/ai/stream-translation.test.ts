// Translated streams as the real SDKs read them: an OpenAI client on Anthropic and Bedrock providers, an Anthropic
// client on an OpenAI provider. A loopback stand-in provider scripts the provider's events exactly (tool calls with
// and without arguments, several in one answer), so what the client's stream helpers put together can be checked.
import assert from 'node:assert/strict';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { after, before, describe, it } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { encodeEventStreamMessage } from '../../plugins/lib/llm/event-stream.ts';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';
import { aiRoute, sdkClients, startAiGateway } from './harness.ts';
import type { AiGateway } from './harness.ts';

const sse = (event: string | undefined, data: unknown): string => `${event ? `event: ${event}\n` : ''}data: ${JSON.stringify(data)}\n\n`;
const frame = (type: string, payload: unknown): Buffer =>
  encodeEventStreamMessage({ ':event-type': type, ':content-type': 'application/json', ':message-type': 'event' }, Buffer.from(JSON.stringify(payload)));

/** An Anthropic stream: one text block, then a tool call with split input and one without input. */
const ANTHROPIC_TOOLS = [
  sse('message_start', { type: 'message_start', message: { id: 'msg_1', type: 'message', role: 'assistant', content: [], model: 'claude-x', usage: { input_tokens: 9, output_tokens: 1 } } }),
  sse('content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }),
  sse('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Checking.' } }),
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

/** The same answer as a Converse stream: the tool without input has no delta at all. */
const CONVERSE_TOOLS = Buffer.concat([
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
  frame('metadata', { usage: { inputTokens: 9, outputTokens: 20, totalTokens: 29 }, metrics: { latencyMs: 5 } }),
]);

describe('translated streams read by the SDKs', () => {
  let upstream: TestUpstream;
  let gw: AiGateway;
  let answer: (req: IncomingMessage, res: ServerResponse) => void = (_req, res) => res.end();

  before(async () => {
    upstream = await startUpstream((req, res) => answer(req, res));
    const host = `127.0.0.1:${upstream.port}`;
    gw = await startAiGateway([
      aiRoute('/an', { name: 'an', provider: { anthropic: { model: 'claude-x' } }, hostOverride: host }),
      aiRoute('/br', { name: 'br', provider: { bedrock: { model: 'anthropic.claude-x', region: 'us-east-1' } }, hostOverride: host }, { backendAuth: { key: 'k' } }),
    ]);
  });
  after(async () => {
    await gw?.stop();
    await upstream?.close();
  });
  const clients = sdkClients(() => gw.base, 'sk-test');
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
    answer = (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(ANTHROPIC_TOOLS);
    };
    const done = await clients.openai('/an').chat.completions.stream(ask).finalChatCompletion();
    expectTools(done, ['toolu_a', 'toolu_b']);
  });

  it('OpenAI client on Bedrock: tool calls with and without arguments', async () => {
    answer = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/vnd.amazon.eventstream' });
      res.end(CONVERSE_TOOLS);
    };
    const done = await clients.openai('/br').chat.completions.stream(ask).finalChatCompletion();
    expectTools(done, ['tooluse_a', 'tooluse_b']);
  });
});
