// Streams are translated chunk by chunk as they arrive, never buffered whole; events split anywhere across TCP
// chunks still translate; a client leaving mid-stream releases the upstream. A loopback stand-in provider controls
// the timing (aimock writes whole streams at once).
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { request } from 'undici';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';
import { accessRecords, aiRoute, startAiGateway } from './harness.ts';
import type { AiGateway } from './harness.ts';

const sse = (event: string, data: unknown): string => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;

const HEAD = [
  sse('message_start', { type: 'message_start', message: { id: 'msg_1', type: 'message', role: 'assistant', content: [], model: 'claude-x', stop_reason: null, usage: { input_tokens: 9, output_tokens: 1 } } }),
  sse('content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }),
  sse('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hel' } }),
].join('');
const TAIL = [
  sse('ping', { type: 'ping' }),
  sse('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'lo' } }),
  sse('content_block_stop', { type: 'content_block_stop', index: 0 }),
  sse('message_delta', { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 2 } }),
  sse('message_stop', { type: 'message_stop' }),
].join('');

describe('LLM streams', () => {
  let upstream: TestUpstream;
  let gw: AiGateway;
  let release: () => void = () => undefined;
  let gate: Promise<void>;
  let mode: 'gated' | 'bytewise' | 'endless' = 'gated';
  let upstreamClosed: Promise<void> = Promise.resolve();

  before(async () => {
    upstream = await startUpstream((_req, res: ServerResponse) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      if (mode === 'gated') {
        res.write(HEAD);
        void gate.then(() => res.end(TAIL));
      } else if (mode === 'bytewise') {
        const all = Buffer.from(HEAD + TAIL);
        let i = 0;
        const step = (): void => {
          if (i >= all.length) return void res.end();
          res.write(all.subarray(i, i + 1));
          i++;
          setImmediate(step);
        };
        step();
      } else {
        res.write(HEAD);
        upstreamClosed = new Promise((resolve) => res.on('close', () => resolve()));
        const timer = setInterval(() => res.write(sse('ping', { type: 'ping' })), 20);
        res.on('close', () => clearInterval(timer));
      }
    });
    gw = await startAiGateway([aiRoute('/an', { name: 'an', provider: { anthropic: {} }, hostOverride: `127.0.0.1:${upstream.port}` })]);
  });
  after(async () => {
    release();
    await gw?.stop();
    await upstream?.close();
  });

  const post = (path: string) =>
    request(`${gw.base}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'claude-x', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
    });

  it('delivers the first translated chunk before the provider has finished', async () => {
    mode = 'gated';
    gate = new Promise((resolve) => (release = resolve));
    const res = await post('/an/gated/v1/chat/completions');
    assert.equal(res.statusCode, 200);
    let seen = '';
    const iterator = res.body[Symbol.asyncIterator]();
    // Read until the first text arrives; the provider is still holding the rest back.
    while (!seen.includes('"content":"Hel"')) {
      const { value, done } = await iterator.next();
      assert.ok(!done, 'the stream ended before the first chunk');
      seen += Buffer.from(value as Uint8Array).toString();
    }
    assert.ok(!seen.includes('[DONE]'));
    release();
    for (;;) {
      const { value, done } = await iterator.next();
      if (done) break;
      seen += Buffer.from(value as Uint8Array).toString();
    }
    assert.ok(seen.includes('"content":"lo"'));
    assert.ok(seen.endsWith('data: [DONE]\n\n'));
    const [log] = await accessRecords(gw, '/an/gated/v1/chat/completions');
    assert.equal(log!['llm.inputTokens'], 9);
    assert.equal(log!['llm.outputTokens'], 2);
  });

  it('translates events split across one-byte chunks', async () => {
    mode = 'bytewise';
    const res = await post('/an/bytes/v1/chat/completions');
    const text = await res.body.text();
    const chunks = text
      .split('\n\n')
      .filter((f) => f && f !== 'data: [DONE]')
      .map((f) => JSON.parse(f.slice('data: '.length)) as { choices: { delta: { content?: string } }[]; usage?: { prompt_tokens: number; completion_tokens: number } });
    assert.equal(chunks.map((c) => c.choices[0]?.delta.content ?? '').join(''), 'Hello');
    assert.deepEqual(chunks[chunks.length - 1]!.usage, { prompt_tokens: 9, completion_tokens: 2, total_tokens: 11 });
    assert.ok(text.endsWith('data: [DONE]\n\n'));
  });

  it('closes the provider connection when the client leaves mid-stream', async () => {
    mode = 'endless';
    const res = await post('/an/leave/v1/chat/completions');
    const iterator = res.body[Symbol.asyncIterator]();
    await iterator.next();
    res.body.destroy();
    await Promise.race([upstreamClosed, new Promise((_, reject) => setTimeout(() => reject(new Error('the upstream stream was not released')), 3000))]);
    const [log] = await accessRecords(gw, '/an/leave/v1/chat/completions');
    assert.equal(log!['llm.inputTokens'], 9, 'what arrived before the client left is logged');
  });
});
