// Client disconnects before, during and after the upstream answers (ARCHITECTURE.md §6: two of these crashed a
// naive proxy). The gateway runs in this process, so a crash fails the whole file; each case also checks that the
// upstream side of the exchange was closed and that the gateway keeps serving.
import assert from 'node:assert/strict';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { connect } from 'node:net';
import type { Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { request } from 'undici';
import type { RunningGateway } from '../helpers/gateway.ts';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';
import { sleep, startGatewayOnFreePorts, waitFor, within } from './proxy-support.ts';

/** What the upstream saw of one request. */
interface Seen {
  path: string;
  arrived: boolean;
  reqClosed: boolean;
  resClosed: boolean;
  /** The response was fully written before the connection went away. */
  finished: boolean;
  bytesReceived: number;
}

describe('client disconnects', () => {
  let gw: RunningGateway;
  let up: TestUpstream;
  let port: number;
  const seen = new Map<string, Seen>();
  const big = Buffer.alloc(16 * 1024 * 1024, 7);

  function track(req: IncomingMessage, res: ServerResponse): Seen {
    const id = String(req.headers['x-test-id']);
    const s: Seen = { path: req.url!, arrived: true, reqClosed: false, resClosed: false, finished: false, bytesReceived: 0 };
    seen.set(id, s);
    req.on('data', (c: Buffer) => (s.bytesReceived += c.length));
    req.on('close', () => (s.reqClosed = true));
    res.on('finish', () => (s.finished = true));
    res.on('close', () => (s.resClosed = true));
    return s;
  }

  before(async () => {
    // bufferBody: false so the handler sees requests as soon as their head arrives (uploads, hanging requests).
    up = await startUpstream(
      (req, res) => {
        const s = track(req, res);
        req.resume();
        switch (req.url) {
          case '/hang':
            return; // never answers
          case '/upload':
            req.on('end', () => res.end('got it'));
            return;
          case '/slow-stream': {
            res.writeHead(200, { 'content-type': 'text/plain' });
            const timer = setInterval(() => res.write('tick\n'), 30);
            res.on('close', () => clearInterval(timer));
            return;
          }
          case '/big':
            res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(big.length) });
            res.end(big);
            return;
          case '/delayed':
            setTimeout(() => {
              if (!res.destroyed) res.end('late answer');
            }, 150);
            return;
          default:
            req.on('end', () => res.end(`ok ${s.path}`));
        }
      },
      { bufferBody: false },
    );
    ({ gw, ports: [port] } = await startGatewayOnFreePorts(1, ([port]) => ({ binds: [{ port, listeners: [{ routes: [{ name: 'dc', backends: [{ host: `127.0.0.1:${up.port}` }] }] }] }] })));
  });
  after(async () => {
    await gw?.stop();
    await up?.close();
  });

  let counter = 0;
  const nextId = (): string => `t${++counter}`;

  async function stillServing(): Promise<void> {
    const res = await within(request(`${gw.url(port)}/health`, { headers: { 'x-test-id': nextId() } }), 5000, 'follow-up request');
    assert.equal(res.statusCode, 200);
    assert.equal(await res.body.text(), 'ok /health');
  }

  /** Open a raw connection and send a request head (and optional partial body). */
  function rawSend(head: string, body?: Buffer): Promise<Socket> {
    return new Promise((resolve, reject) => {
      const s = connect(port, '127.0.0.1', () => {
        s.write(`${head.replace(/\n/g, '\r\n')}\r\n\r\n`);
        if (body) s.write(body);
        resolve(s);
      });
      s.on('error', reject);
    });
  }

  it('before the upstream is reached: the client sends a request and closes at once', async () => {
    const ids = Array.from({ length: 20 }, () => nextId());
    for (const id of ids) (await rawSend(`GET /delayed HTTP/1.1\nHost: h\nx-test-id: ${id}`)).destroy();
    // Whatever reached the upstream must be closed on its side too.
    await sleep(50);
    await waitFor(() => ids.every((id) => !seen.has(id) || seen.get(id)!.resClosed), 5000, 'upstream requests to close');
    await stillServing();
  });

  it('while the upstream is still waiting: the upstream request is closed', async () => {
    const id = nextId();
    const controller = new AbortController();
    const pending = request(`${gw.url(port)}/hang`, { headers: { 'x-test-id': id }, signal: controller.signal });
    await waitFor(() => seen.get(id)?.arrived === true, 5000, 'the request to reach the upstream');
    controller.abort();
    await assert.rejects(pending);
    await waitFor(() => seen.get(id)!.resClosed, 5000, 'the upstream response to close');
    assert.equal(seen.get(id)!.finished, false);
    await stillServing();
    await sleep(20);
    assert.ok(gw.logs.some((l) => / request .*route=dc .*http\.path=\/hang .*http\.status=499/.test(l)), 'access log has a 499 for /hang');
  });

  it('during a request body upload: the upstream request is closed', async () => {
    const id = nextId();
    const socket = await rawSend(`POST /upload HTTP/1.1\nHost: h\ncontent-length: 1000000\nx-test-id: ${id}`, Buffer.alloc(100_000, 1));
    await waitFor(() => (seen.get(id)?.bytesReceived ?? 0) > 0, 5000, 'part of the body to reach the upstream');
    socket.destroy();
    await waitFor(() => seen.get(id)!.reqClosed && seen.get(id)!.resClosed, 5000, 'the upstream request to close');
    assert.ok(seen.get(id)!.bytesReceived < 1_000_000);
    assert.equal(seen.get(id)!.finished, false);
    await stillServing();
  });

  it('while streaming a slow response: the upstream request is closed', async () => {
    const id = nextId();
    const controller = new AbortController();
    const res = await request(`${gw.url(port)}/slow-stream`, { headers: { 'x-test-id': id }, signal: controller.signal });
    assert.equal(res.statusCode, 200);
    res.body.on('error', () => undefined);
    let got = '';
    for await (const chunk of res.body) {
      got += (chunk as Buffer).toString();
      if (got.length >= 15) break; // leaves the loop, destroying the body
    }
    controller.abort();
    await waitFor(() => seen.get(id)!.resClosed, 5000, 'the upstream response to close');
    assert.equal(seen.get(id)!.finished, false, 'the slow stream never finishes on its own');
    await stillServing();
  });

  it('while streaming a large response (client stops reading, then leaves)', async () => {
    const id = nextId();
    const socket = await rawSend(`GET /big HTTP/1.1\nHost: h\nx-test-id: ${id}`);
    // Read the head and a little of the body, then stop reading: backpressure reaches the gateway and the upstream.
    await new Promise<void>((resolve) => {
      let n = 0;
      socket.on('data', (c: Buffer) => {
        n += c.length;
        if (n > 64 * 1024) {
          socket.pause();
          resolve();
        }
      });
    });
    await sleep(100);
    socket.destroy();
    await waitFor(() => seen.get(id)!.resClosed, 5000, 'the upstream response to close');
    await stillServing();
  });

  it('after the upstream answered: the response is complete upstream but the client is gone', async () => {
    const id = nextId();
    const socket = await rawSend(`GET /big HTTP/1.1\nHost: h\nx-test-id: ${id}`);
    socket.pause(); // never read
    await waitFor(() => seen.get(id)?.arrived === true, 5000, 'the request to reach the upstream');
    await sleep(100);
    socket.destroy();
    await waitFor(() => seen.get(id)!.resClosed, 5000, 'the upstream response to close');
    // Also a tiny response the client never reads: answered upstream, the client closes after it was written.
    const id2 = nextId();
    const s2 = await rawSend(`GET /small HTTP/1.1\nHost: h\nx-test-id: ${id2}`);
    await waitFor(() => seen.get(id2)?.finished === true, 5000, 'the upstream to answer');
    s2.destroy();
    await stillServing();
  });

  it('after the response: the client closes a keep-alive connection between requests', async () => {
    const id = nextId();
    const socket = await rawSend(`GET /first HTTP/1.1\nHost: h\nx-test-id: ${id}`);
    await new Promise<void>((resolve) => socket.once('data', () => resolve()));
    socket.end();
    await waitFor(() => seen.get(id)?.finished === true, 5000, 'the upstream to answer');
    await stillServing();
  });

  it('under load: 200 requests aborted at random moments never crash the gateway', async () => {
    const paths = ['/hang', '/slow-stream', '/big', '/delayed', '/upload', '/ok'];
    const ids: string[] = [];
    await Promise.all(
      Array.from({ length: 200 }, async (_, i) => {
        const id = nextId();
        ids.push(id);
        const path = paths[i % paths.length]!;
        const controller = new AbortController();
        setTimeout(() => controller.abort(), Math.floor(Math.random() * 120));
        try {
          const res = await request(`${gw.url(port)}${path}`, {
            method: path === '/upload' ? 'POST' : 'GET',
            body: path === '/upload' ? Buffer.alloc(200_000, 2) : undefined,
            headers: { 'x-test-id': id },
            signal: controller.signal,
          });
          res.body.on('error', () => undefined);
          await res.body.text().catch(() => undefined);
        } catch {
          // aborted: expected
        }
      }),
    );
    // Every request that reached the upstream and did not finish there must have been closed.
    await waitFor(() => ids.every((id) => !seen.has(id) || seen.get(id)!.resClosed), 10_000, 'all upstream requests to close');
    for (let i = 0; i < 5; i++) await stillServing();
  });

  it('nothing is left in flight', async () => {
    // With every exchange finished, a graceful stop must not wait for the drain deadline.
    await stillServing();
    const started = Date.now();
    await gw.stop();
    assert.ok(Date.now() - started < 3000, `stop took ${Date.now() - started}ms`);
    // A fresh gateway for the `after` hook to stop.
    ({ gw, ports: [port] } = await startGatewayOnFreePorts(1, ([port]) => ({ binds: [{ port, listeners: [{ routes: [{ name: 'dc', backends: [{ host: `127.0.0.1:${up.port}` }] }] }] }] })));
  });
});
