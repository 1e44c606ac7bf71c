// A streamed ai answer keeps the upstream's raw header list (ForwardOptions.rawHeaders, ADR 0081): passed through, it
// is written as the plain route writes an answer (the upstream's order; hop-by-hop and
// `Connection`-named headers dropped; its Content-Length kept for the same bytes) while the events are observed for
// usage. The edges `request()`'s body handled must read the same: an upstream breaking off mid-stream cuts the
// client's response, the per-attempt deadline ends when the answer starts, a client leaving stops the upstream call,
// a translated stream still gets its own headers. Real gateway, raw upstreams.
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';
import { accessRecords, aiRoute, startAiGateway } from './harness.ts';
import type { AiGateway } from './harness.ts';

const CHAT = JSON.stringify({ model: 'gpt-x', stream: true, messages: [{ role: 'user', content: 'hi' }] });

const chunk = (delta: object, usage?: object): string =>
  `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'gpt-x-2024', choices: usage ? [] : [{ index: 0, delta, finish_reason: null }], ...(usage ? { usage } : {}) })}\n\n`;
const STREAM = chunk({ role: 'assistant', content: '' }) + chunk({ content: 'Hel' }) + chunk({ content: 'lo' }) + chunk({}, { prompt_tokens: 7, completion_tokens: 2, total_tokens: 9 }) + 'data: [DONE]\n\n';

interface Raw {
  status: number;
  raw: string[];
  text: string;
  aborted: boolean;
}

/** A streamed chat through the gateway with node:http: the raw header list as the client got it, and the body. */
function post(url: string, body = CHAT): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: 'POST', headers: { 'content-type': 'application/json' } }, (r) => {
      let text = '';
      let aborted = false;
      r.setEncoding('utf8');
      r.on('data', (d: string) => (text += d));
      r.on('aborted', () => (aborted = true));
      r.on('error', () => (aborted = true));
      r.on('close', () => resolve({ status: r.statusCode!, raw: r.rawHeaders, text, aborted: aborted || !r.complete }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const values = (res: Raw, name: string): string[] => res.raw.filter((_v, i) => i % 2 === 1 && res.raw[i - 1]!.toLowerCase() === name);

describe('a streamed ai answer keeps the upstream raw headers', () => {
  let gw: AiGateway;
  let headers: TestUpstream;
  let chunked: TestUpstream;
  let broken: TestUpstream;
  let slow: TestUpstream;
  let holding: TestUpstream;
  let messages: TestUpstream;
  let holdingClosed: Promise<void>;

  before(async () => {
    // Headers as an upstream may send them: mixed case, repeated, hop-by-hop and `Connection`-named ones; a length.
    headers = await startUpstream((_req, res) => {
      res.writeHead(200, ['Content-Type', 'text/event-stream', 'X-Upstream', 'a', 'Set-Cookie', 'a=1', 'X-Request-Tag', 't', 'set-cookie', 'b=2', 'Connection', 'keep-alive, X-Drop', 'X-Drop', 'gone', 'Keep-Alive', 'timeout=5', 'Content-Length', String(Buffer.byteLength(STREAM))]);
      res.end(STREAM);
    });
    // Chunked, event by event.
    chunked = await startUpstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const parts = STREAM.split(/(?<=\n\n)/);
      const next = (): void => {
        const part = parts.shift();
        if (part === undefined) return void res.end();
        res.write(part);
        setTimeout(next, 5);
      };
      next();
    });
    // Two events, then the connection is cut.
    broken = await startUpstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(chunk({ role: 'assistant', content: '' }) + chunk({ content: 'Hel' }));
      setTimeout(() => res.socket?.destroy(), 30);
    });
    // Headers at once, the events after the per-attempt deadline (which covers the wait for the answer to start).
    slow = await startUpstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.flushHeaders();
      setTimeout(() => res.end(STREAM), 600);
    });
    let closed!: () => void;
    holdingClosed = new Promise((resolve) => (closed = resolve));
    holding = await startUpstream((req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(chunk({ role: 'assistant', content: '' }));
      req.socket.once('close', closed);
    });
    // An Anthropic stream for an OpenAI client: translated, so the gateway's own SSE headers.
    messages = await startUpstream((_req, res) => {
      const ev = (type: string, data: object): string => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
      res.writeHead(200, ['Content-Type', 'text/event-stream', 'X-Upstream', 'm']);
      res.end(
        ev('message_start', { message: { id: 'msg_1', type: 'message', role: 'assistant', model: 'claude-x', content: [], usage: { input_tokens: 5, output_tokens: 0 } } }) +
          ev('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }) +
          ev('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'Hi' } }) +
          ev('content_block_stop', { index: 0 }) +
          ev('message_delta', { delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 1 } }) +
          ev('message_stop', {}),
      );
    });
    const openAI = (u: TestUpstream) => ({ name: `b${u.port}`, provider: { openAI: {} }, hostOverride: `127.0.0.1:${u.port}` });
    gw = await startAiGateway([
      aiRoute('/headers', openAI(headers)),
      aiRoute('/chunked', openAI(chunked)),
      aiRoute('/broken', openAI(broken)),
      aiRoute('/slow', openAI(slow), { timeout: { backendRequestTimeout: '300ms' } }),
      aiRoute('/holding', openAI(holding)),
      aiRoute('/translated', { name: 'an', provider: { anthropic: {} }, hostOverride: `127.0.0.1:${messages.port}` }),
    ]);
  });
  after(async () => {
    await gw?.stop();
    for (const u of [headers, chunked, broken, slow, holding, messages]) await u?.close();
  });

  it('passes the stream through with the upstream headers as the plain route writes them, usage logged', async () => {
    const res = await post(`${gw.base}/headers/v1/chat/completions`);
    assert.equal(res.status, 200);
    assert.equal(res.text, STREAM);
    const names = res.raw.filter((_v, i) => i % 2 === 0).map((n) => n.toLowerCase());
    // In the upstream's order, as the plain route writes them (a header object groups a repeated name).
    const upstreamNames = names.filter((n) => /^(content-type|x-upstream|set-cookie|x-request-tag)$/.test(n));
    assert.deepEqual(upstreamNames, ['content-type', 'x-upstream', 'set-cookie', 'x-request-tag', 'set-cookie']);
    assert.deepEqual(values(res, 'set-cookie'), ['a=1', 'b=2']);
    assert.deepEqual(values(res, 'content-length'), [String(Buffer.byteLength(STREAM))], 'the same bytes: the upstream length stays');
    assert.equal(names.includes('x-drop'), false);
    assert.equal(names.includes('transfer-encoding'), false);
    assert.notDeepEqual(values(res, 'keep-alive'), ['timeout=5']);
    const [log] = await accessRecords(gw, '/headers/v1/chat/completions');
    assert.equal(log!['llm.inputTokens'], 7);
    assert.equal(log!['llm.outputTokens'], 2);
    assert.equal(log!['llm.responseModel'], 'gpt-x-2024');
  });

  it('streams a chunked answer event by event, byte for byte, usage logged', async () => {
    const res = await post(`${gw.base}/chunked/v1/chat/completions`);
    assert.equal(res.status, 200);
    assert.equal(res.text, STREAM);
    assert.equal(res.aborted, false);
    const [log] = await accessRecords(gw, '/chunked/v1/chat/completions');
    assert.equal(log!['llm.outputTokens'], 2);
  });

  it('cuts the client response when the upstream breaks off mid-stream', async () => {
    const res = await post(`${gw.base}/broken/v1/chat/completions`);
    assert.equal(res.status, 200);
    assert.ok(res.text.includes('"Hel"'));
    assert.equal(res.aborted, true, 'a truncated stream, not a clean end');
    const [log] = await accessRecords(gw, '/broken/v1/chat/completions');
    assert.match(String(log!.error ?? ''), /upstream stream failed/);
  });

  it('stops the per-attempt deadline when the answer starts', async () => {
    const res = await post(`${gw.base}/slow/v1/chat/completions`);
    assert.equal(res.status, 200);
    assert.equal(res.text, STREAM);
  });

  it('stops the upstream call when the client leaves mid-stream', async () => {
    const req = httpRequest(`${gw.base}/holding/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' } }, (r) => {
      r.once('data', () => req.destroy());
    });
    req.on('error', () => undefined);
    req.end(CHAT);
    const timedOut = Symbol('timeout');
    const outcome = await Promise.race([holdingClosed, new Promise((r) => setTimeout(() => r(timedOut), 5000))]);
    assert.notEqual(outcome, timedOut, 'the upstream connection was not closed after the client left');
  });

  it('a translated stream gets the gateway SSE headers, no upstream length', async () => {
    const res = await post(`${gw.base}/translated/v1/chat/completions`);
    assert.equal(res.status, 200);
    assert.ok(res.text.includes('"content":"Hi"'));
    assert.ok(res.text.endsWith('data: [DONE]\n\n'));
    assert.deepEqual(values(res, 'content-type'), ['text/event-stream']);
    assert.deepEqual(values(res, 'cache-control'), ['no-cache']);
    assert.deepEqual(values(res, 'content-length'), []);
    assert.deepEqual(values(res, 'x-upstream'), ['m']);
  });
});
