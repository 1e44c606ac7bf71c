// An Anthropic client through OpenAI-style providers: Messages translated to Chat Completions and back (real
// @anthropic-ai/sdk client, aimock upstream).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import { accessRecords, aiRoute, recordedAi, rejection, sdkClients } from './harness.ts';

const ROUTES = { testAi: { routes: { '/v1/messages': 'messages' } } };

describe('Anthropic Messages clients on an openAI provider', () => {
  const t = recordedAi((hostPort) => [
    aiRoute('/oa', { name: 'oa', provider: { openAI: { model: 'gpt-4o' } }, hostOverride: hostPort }, ROUTES),
    aiRoute('/gm', { name: 'gm', provider: { gemini: { openAICompatible: true } }, hostOverride: hostPort }, ROUTES),
  ]);

  const client = (prefix: string): Anthropic => sdkClients(() => t.gw.base, 'sk-openai-key').anthropic(prefix);

  it('translates a message with a system prompt to /v1/chat/completions and the answer back', async () => {
    const msg = await client('/oa/plain').messages.create({
      model: 'claude-test-1',
      max_tokens: 64,
      system: 'Be brief.',
      stop_sequences: ['END'],
      messages: [{ role: 'user', content: 'hello' }],
    });
    assert.equal(msg.type, 'message');
    assert.deepEqual(msg.content, [{ type: 'text', text: 'Hello from the mock!' }]);
    assert.equal(msg.stop_reason, 'end_turn');
    assert.deepEqual(msg.usage, { input_tokens: 11, output_tokens: 5 });
    const wire = t.rec.last();
    assert.equal(wire.url, '/v1/chat/completions');
    assert.equal(wire.headers.authorization, 'Bearer sk-openai-key', 'the Anthropic SDK key (x-api-key) is sent as a Bearer key');
    assert.equal(wire.headers['x-api-key'], undefined);
    assert.equal(wire.headers['anthropic-version'], undefined);
    assert.deepEqual(wire.json(), {
      model: 'gpt-4o',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'hello' },
      ],
      max_completion_tokens: 64,
      stop: ['END'],
    });
    const [log] = await accessRecords(t.gw, '/oa/plain/v1/messages');
    assert.equal(log!['llm.provider'], 'openai');
    assert.equal(log!['llm.model'], 'gpt-4o');
    assert.equal(log!['llm.inputTokens'], 11);
  });

  it('translates tools and a tool call', async () => {
    const msg = await client('/oa/tools').messages.create({
      model: 'claude-test-1',
      max_tokens: 64,
      tools: [{ name: 'get_weather', description: 'Weather', input_schema: { type: 'object', properties: { city: { type: 'string' } } } }],
      tool_choice: { type: 'tool', name: 'get_weather' },
      messages: [{ role: 'user', content: 'weather' }],
    });
    assert.equal(msg.stop_reason, 'tool_use');
    const block = msg.content[0]!;
    assert.ok(block.type === 'tool_use');
    assert.equal(block.name, 'get_weather');
    assert.deepEqual(block.input, { city: 'Paris' });
    const sent = t.rec.last().json();
    assert.deepEqual(sent.tools, [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } }, description: 'Weather' } }]);
    assert.deepEqual(sent.tool_choice, { type: 'function', function: { name: 'get_weather' } });

    await client('/oa/tools2').messages.create({
      model: 'claude-test-1',
      max_tokens: 64,
      tools: [{ name: 'get_weather', input_schema: { type: 'object' } }],
      messages: [
        { role: 'user', content: 'weather' },
        { role: 'assistant', content: [{ type: 'tool_use', id: block.id, name: 'get_weather', input: { city: 'Paris' } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: block.id, content: 'sunny' }] },
      ],
    });
    assert.deepEqual(t.rec.last().json().messages, [
      { role: 'user', content: 'weather' },
      { role: 'assistant', content: null, tool_calls: [{ id: block.id, type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
      { role: 'tool', tool_call_id: block.id, content: 'sunny' },
    ]);
  });

  it('streams: chat.completion.chunks become message_start … message_stop for the SDK', async () => {
    const stream = client('/oa/stream').messages.stream({ model: 'claude-test-1', max_tokens: 64, messages: [{ role: 'user', content: 'hello' }] });
    const events: string[] = [];
    stream.on('streamEvent', (e) => events.push(e.type));
    let text = '';
    stream.on('text', (t) => (text += t));
    const final = await stream.finalMessage();
    assert.equal(text, 'Hello from the mock!');
    assert.equal(final.stop_reason, 'end_turn');
    assert.deepEqual(final.usage.output_tokens, 5);
    assert.deepEqual(final.usage.input_tokens, 11);
    assert.deepEqual(events, ['message_start', 'content_block_start', 'content_block_delta', 'content_block_stop', 'message_delta', 'message_stop']);
    assert.deepEqual(t.rec.last().json().stream_options, { include_usage: true }, 'usage requested to fill message_delta');
    const [log] = await accessRecords(t.gw, '/oa/stream/v1/messages');
    assert.equal(log!['llm.streaming'], true);
    assert.equal(log!['llm.outputTokens'], 5);
  });

  it('streams a tool call as tool_use blocks', async () => {
    const stream = client('/oa/stream-tool').messages.stream({
      model: 'claude-test-1',
      max_tokens: 64,
      tools: [{ name: 'get_weather', input_schema: { type: 'object' } }],
      messages: [{ role: 'user', content: 'weather' }],
    });
    const final = await stream.finalMessage();
    assert.equal(final.stop_reason, 'tool_use');
    const block = final.content[0]!;
    assert.ok(block.type === 'tool_use');
    assert.deepEqual(block.input, { city: 'Paris' });
  });

  it('translates a 429 into the Anthropic error shape', async () => {
    const err = await rejection(client('/oa/boom').messages.create({ model: 'claude-test-1', max_tokens: 8, messages: [{ role: 'user', content: 'boom' }] }), Anthropic.RateLimitError);
    assert.deepEqual(err.error, { type: 'error', error: { type: 'rate_limit_error', message: 'rate limited' } });
  });

  it('reaches gemini through its OpenAI-compatible path', async () => {
    const msg = await client('/gm/plain').messages.create({ model: 'gemini-2.5-flash', max_tokens: 64, messages: [{ role: 'user', content: 'hello' }] });
    assert.deepEqual(msg.content, [{ type: 'text', text: 'Hello from the mock!' }]);
    assert.equal(t.rec.last().url, '/v1beta/openai/chat/completions');
    const [log] = await accessRecords(t.gw, '/gm/plain/v1/messages');
    assert.equal(log!['llm.provider'], 'gcp.gemini');
  });
});
