// A non-streamed call's answer is read whole by the upstream target (ADR 0058): the edges that a streamed body handled
// before must read the same. A chunked answer over 64 KiB passes through whole; an answer over the 32 MiB cap that
// must be translated is a 502 `response too large`; an upstream breaking off mid-body is a 502; the per-attempt
// deadline still ends when the answer starts; a client leaving stops the upstream call. Real gateway, raw upstreams.
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';
import { aiPreset } from './harness.ts';

const CHAT = JSON.stringify({ model: 'gpt-x', messages: [{ role: 'user', content: 'hi' }] });

function completion(text: string): string {
  return JSON.stringify({ id: 'c1', object: 'chat.completion', created: 1, model: 'gpt-x', choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }], usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 } });
}

async function post(url: string, body = CHAT): Promise<{ status: number; text: string }> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  return { status: res.status, text: await res.text() };
}

describe('a non-streamed ai answer read whole', () => {
  let gw: RunningGateway;
  let base: string;
  let big: TestUpstream;
  let huge: TestUpstream;
  let broken: TestUpstream;
  let slowBody: TestUpstream;
  let holding: TestUpstream;
  let headers: TestUpstream;
  let holdingClosed: Promise<void>;
  const bigAnswer = completion('x'.repeat(200 * 1024));

  before(async () => {
    // Chunked (no Content-Length), over 64 KiB: it was tapped as it streamed by.
    big = await startUpstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write(bigAnswer.slice(0, 1000));
      setTimeout(() => res.end(bigAnswer.slice(1000)), 20);
    });
    // An Anthropic answer over the 32 MiB cap of an answer that must be translated.
    huge = await startUpstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[{"type":"text","text":"');
      const chunk = Buffer.alloc(1024 * 1024, 0x61);
      let left = 34;
      const more = (): void => {
        while (left > 0) {
          left--;
          if (!res.write(chunk)) return void res.once('drain', more);
        }
        res.end('"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}');
      };
      more();
      res.on('error', () => undefined);
    });
    // Headers and a part of the body, then the connection is cut.
    broken = await startUpstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '1000' });
      res.write('{"id":"c1",');
      setTimeout(() => res.socket?.destroy(), 20);
    });
    // Headers at once, the body after the per-attempt deadline (which covers the wait for the answer to start).
    slowBody = await startUpstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.flushHeaders();
      setTimeout(() => res.end(completion('late body')), 600);
    });
    let closed!: () => void;
    holdingClosed = new Promise((resolve) => (closed = resolve));
    holding = await startUpstream((req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"id":');
      req.socket.once('close', closed);
    });
    // Headers as an upstream may send them: mixed case, repeated, hop-by-hop and `Connection`-named ones, chunked.
    headers = await startUpstream((_req, res) => {
      res.writeHead(200, ['Content-Type', 'application/json', 'X-Upstream', 'a', 'Set-Cookie', 'a=1', 'set-cookie', 'b=2', 'Connection', 'keep-alive, X-Drop', 'X-Drop', 'gone', 'Keep-Alive', 'timeout=5']);
      res.end(completion('headers'));
    });
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    const route = (name: string, upstream: TestUpstream, provider: Record<string, unknown> = { openAI: {} }, policies?: Record<string, unknown>) => ({
      name,
      matches: [{ path: { pathPrefix: `/${name}` } }],
      backends: [{ ai: { name, provider, hostOverride: `127.0.0.1:${upstream.port}` } }],
      ...(policies ? { policies } : {}),
    });
    gw = await startGateway(
      {
        binds: [
          {
            port,
            listeners: [
              {
                routes: [
                  route('big', big),
                  route('huge', huge, { anthropic: {} }),
                  route('broken', broken),
                  route('slowbody', slowBody, { openAI: {} }, { timeout: { backendRequestTimeout: '300ms' } }),
                  route('holding', holding),
                  route('headers', headers),
                ],
              },
            ],
          },
        ],
      },
      { preset: aiPreset },
    );
  });
  after(async () => {
    await gw?.stop();
    for (const u of [big, huge, broken, slowBody, holding, headers]) await u?.close();
  });

  it('passes a chunked answer over 64 KiB through whole', async () => {
    const { status, text } = await post(`${base}/big/v1/chat/completions`);
    assert.equal(status, 200);
    assert.equal(text, bigAnswer);
    assert.equal(big.received.at(-1)?.headers['accept-encoding'], 'identity');
  });

  it('passes the upstream headers on as the plain route does: hop-by-hop ones dropped, a Content-Length for the chunked body', async () => {
    const res = await new Promise<{ status: number; raw: string[]; text: string }>((resolve, reject) => {
      const req = httpRequest(`${base}/headers/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' } }, (r) => {
        let text = '';
        r.setEncoding('utf8');
        r.on('data', (d: string) => (text += d));
        r.on('end', () => resolve({ status: r.statusCode!, raw: r.rawHeaders, text }));
      });
      req.on('error', reject);
      req.end(CHAT);
    });
    assert.equal(res.status, 200);
    assert.equal(res.text, completion('headers'));
    const names = res.raw.filter((_v, i) => i % 2 === 0).map((n) => n.toLowerCase());
    const value = (name: string): string[] => res.raw.filter((_v, i) => i % 2 === 1 && res.raw[i - 1]!.toLowerCase() === name);
    assert.deepEqual(value('content-type'), ['application/json']);
    assert.deepEqual(value('x-upstream'), ['a']);
    assert.deepEqual(value('set-cookie'), ['a=1', 'b=2']);
    assert.deepEqual(value('content-length'), [String(Buffer.byteLength(completion('headers')))]);
    assert.equal(names.includes('x-drop'), false);
    assert.equal(names.includes('transfer-encoding'), false);
    // node:http adds its own Connection/Keep-Alive for the client's connection; the upstream's are not relayed.
    assert.notDeepEqual(value('keep-alive'), ['timeout=5']);
  });

  it('answers 502 `response too large` for a translated answer over 32 MiB', async () => {
    const { status, text } = await post(`${base}/huge/v1/chat/completions`);
    assert.equal(status, 502);
    assert.match(text, /response too large/);
  });

  it('answers 502 when the upstream breaks off inside the body', async () => {
    const { status, text } = await post(`${base}/broken/v1/chat/completions`);
    assert.equal(status, 502);
    assert.match(text, /failed to process LLM response/);
  });

  it('stops the per-attempt deadline when the answer starts, as before', async () => {
    const { status, text } = await post(`${base}/slowbody/v1/chat/completions`);
    assert.equal(status, 200);
    assert.match(text, /late body/);
  });

  it('stops the upstream call when the client leaves mid-answer', async () => {
    const req = httpRequest(`${base}/holding/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' } });
    req.on('error', () => undefined);
    req.end(CHAT);
    // Wait until the upstream got the request, then leave.
    for (let i = 0; i < 100 && holding.received.length === 0; i++) await new Promise((r) => setTimeout(r, 20));
    assert.equal(holding.received.length, 1);
    req.destroy();
    const timedOut = Symbol('timeout');
    const outcome = await Promise.race([holdingClosed, new Promise((r) => setTimeout(() => r(timedOut), 5000))]);
    assert.notEqual(outcome, timedOut, 'the upstream connection was not closed after the client left');
  });
});
