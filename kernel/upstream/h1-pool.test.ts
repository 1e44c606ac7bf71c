import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { createServer as createHttpServer } from 'node:http';
import { createServer } from 'node:net';
import { PassThrough } from 'node:stream';
import type { IncomingMessage } from 'node:http';
import type { Server, Socket } from 'node:net';
import { H1Pool } from './h1-pool.ts';
import type { H1Dispatch, H1Handler } from './h1-connection.ts';

interface Outcome {
  status?: number;
  raw?: string[];
  body: string;
  error?: Error & { code?: string };
  abort?: (err?: Error) => void;
}

/** Dispatch and wait for the end or the error. */
function send(pool: H1Pool, opts: Partial<H1Dispatch>, onAbortable?: (abort: (err?: Error) => void) => void): Promise<Outcome> {
  return new Promise((resolve) => {
    const out: Outcome = { body: '' };
    const handler: H1Handler = {
      onConnect: (abort) => onAbortable?.(abort),
      onHeaders: (status, raw) => {
        out.status = status;
        out.raw = raw;
        return true;
      },
      onData: (chunk) => {
        out.body += chunk.toString();
        return true;
      },
      onComplete: () => resolve(out),
      onEnd: (last) => {
        out.body += last.toString();
        resolve(out);
      },
      onError: (err) => {
        out.error = err;
        resolve(out);
      },
    };
    pool.dispatch({ path: '/', method: 'GET', headers: { host: 'up' }, body: null, headersTimeout: 0, bodyTimeout: 0, ...opts }, handler);
  });
}

/** A raw TCP upstream: `onRequest(socket, requestText, index)` per request head seen on any connection. */
async function upstream(onRequest: (socket: Socket, head: string, n: number) => void): Promise<{ server: Server; port: number; connections: () => number; requests: string[] }> {
  let connections = 0;
  const requests: string[] = [];
  const server = createServer((socket) => {
    connections++;
    let buf = '';
    socket.on('data', (c: Buffer) => {
      buf += c.toString('latin1');
      for (let end = buf.indexOf('\r\n\r\n'); end !== -1; end = buf.indexOf('\r\n\r\n')) {
        const head = buf.slice(0, end + 4);
        const length = Number(/content-length: (\d+)/i.exec(head)?.[1] ?? 0);
        if (buf.length < end + 4 + length) return;
        requests.push(buf.slice(0, end + 4 + length));
        buf = buf.slice(end + 4 + length);
        onRequest(socket, head, requests.length);
      }
    });
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as { port: number }).port, connections: () => connections, requests };
}

const OK = 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok';
const servers: Server[] = [];
const pools: H1Pool[] = [];
after(async () => {
  for (const p of pools) await p.destroy();
  for (const s of servers) s.close();
});
async function setup(onRequest: (socket: Socket, head: string, n: number) => void): Promise<{ pool: H1Pool; up: Awaited<ReturnType<typeof upstream>> }> {
  const up = await upstream(onRequest);
  servers.push(up.server);
  const pool = new H1Pool('127.0.0.1', up.port);
  pools.push(pool);
  return { pool, up };
}

describe('H1Pool against a real upstream', () => {
  it('reuses a keep-alive connection, and writes the body with its length', async () => {
    const { pool, up } = await setup((s) => s.write(OK));
    assert.equal((await send(pool, {})).body, 'ok');
    const post = await send(pool, { method: 'POST', body: Buffer.from('{"a":1}'), headers: { host: 'up', 'content-type': 'application/json', 'content-length': '99' } });
    assert.equal(post.status, 200);
    assert.equal(up.connections(), 1);
    assert.match(up.requests[1]!, /^POST \/ HTTP\/1\.1\r\nconnection: keep-alive\r\nhost: up\r\ncontent-type: application\/json\r\ncontent-length: 7\r\n\r\n\{"a":1\}$/);
    assert.match(up.requests[0]!, /^GET \/ HTTP\/1\.1\r\nconnection: keep-alive\r\nhost: up\r\n\r\n$/);
  });

  it('a GET whose reused idle connection was dropped before any answer byte is sent again on a new one; a POST is not', async () => {
    // Every second request on a connection: the upstream closes it without answering (an idle close racing the request).
    const seen = new WeakMap<Socket, number>();
    const { pool, up } = await setup((s) => {
      const n = (seen.get(s) ?? 0) + 1;
      seen.set(s, n);
      if (n === 2) s.destroy();
      else s.write(OK);
    });
    assert.equal((await send(pool, {})).body, 'ok');
    const retried = await send(pool, {});
    assert.equal(retried.error, undefined);
    assert.equal(retried.body, 'ok');
    assert.equal(up.connections(), 2);
    const post = await send(pool, { method: 'POST', body: Buffer.from('x') });
    assert.equal(post.error?.code, 'UND_ERR_SOCKET');
    assert.equal(up.requests.filter((r) => r.startsWith('POST')).length, 1, 'the POST was sent once');
  });

  it('the headers deadline: a short one (timer) and a long one (the pool sweep)', async () => {
    const { pool } = await setup(() => undefined);
    let t0 = performance.now();
    const short = await send(pool, { headersTimeout: 200 });
    assert.equal(short.error?.code, 'UND_ERR_HEADERS_TIMEOUT');
    assert.ok(performance.now() - t0 >= 190);
    t0 = performance.now();
    const long = await send(pool, { headersTimeout: 1000 });
    const took = performance.now() - t0;
    assert.equal(long.error?.code, 'UND_ERR_HEADERS_TIMEOUT');
    assert.ok(took >= 990 && took < 2000, `took ${took} ms`);
  });

  it('the body deadline: an upstream silent mid-body', async () => {
    const { pool } = await setup((s) => s.write('HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc'));
    const out = await send(pool, { bodyTimeout: 300 });
    assert.equal(out.status, 200);
    assert.equal(out.error?.code, 'UND_ERR_BODY_TIMEOUT');
  });

  it('refuses a header value that would split the request; nothing is sent', async () => {
    const { pool, up } = await setup((s) => s.write(OK));
    const out = await send(pool, { headers: { host: 'up', 'x-a': 'a\r\nx-injected: 1' } });
    assert.equal(out.error?.code, 'UND_ERR_INVALID_ARG');
    const bad = await send(pool, { path: '/a b' });
    assert.equal(bad.error?.code, 'UND_ERR_INVALID_ARG');
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(up.requests.length, 0);
  });

  it("honours the upstream's Keep-Alive: timeout= (2 s less undici's 2 s threshold: not reused)", async () => {
    const { pool, up } = await setup((s) => s.write('HTTP/1.1 200 OK\r\nKeep-Alive: timeout=2\r\nContent-Length: 2\r\n\r\nok'));
    await send(pool, {});
    await send(pool, {});
    assert.equal(up.connections(), 2);
  });

  it('an abort mid-answer closes the connection and reports the error', async () => {
    let closed = false;
    const { pool } = await setup((s) => {
      s.on('close', () => (closed = true));
      s.write('HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc');
    });
    let abort: ((err?: Error) => void) | undefined;
    const pending = send(pool, {}, (a) => (abort = a));
    await new Promise((r) => setTimeout(r, 100));
    abort!(new Error('client left'));
    const out = await pending;
    assert.equal(out.error?.message, 'client left');
    await new Promise((r) => setTimeout(r, 50));
    assert.ok(closed);
  });

  it('a malformed answer fails the request with the parser error', async () => {
    const { pool } = await setup((s) => s.write('HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nok'));
    const out = await send(pool, {});
    assert.equal(out.error?.code, 'HPE_UNEXPECTED_CONTENT_LENGTH');
  });

  it('an answer before the streamed request body was all sent: delivered, and that connection is closed, not reused', async () => {
    let connections = 0;
    const server = createServer((s) => {
      connections++;
      s.on('error', () => undefined);
      s.once('data', () => s.write('HTTP/1.1 413 Payload Too Large\r\nContent-Length: 0\r\n\r\n'));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    servers.push(server);
    const pool = new H1Pool('127.0.0.1', (server.address() as { port: number }).port);
    pools.push(pool);
    const body = new PassThrough();
    body.write('abc'); // of 10 declared; the rest never comes
    const out = await send(pool, { method: 'POST', headers: { host: 'up', 'content-length': '10' }, body: body as unknown as IncomingMessage });
    assert.equal(out.status, 413);
    assert.equal(out.error, undefined);
    body.write('more');
    assert.equal((await send(pool, {})).status, 413);
    assert.equal(connections, 2);
  });

  it('idle connections the upstream closes leave the idle list (older ones at the next sweep); the newest is reused', async () => {
    const sockets: Socket[] = [];
    let held: Socket[] = [];
    const { pool, up } = await setup((s) => {
      // The first three requests are answered together, so that they take three connections.
      sockets.push(s);
      held.push(s);
      if (held.length === 3) for (const h of held.splice(0)) h.write(OK);
      if (sockets.length > 3) s.write(OK);
    });
    const first = await Promise.all([send(pool, {}), send(pool, {}), send(pool, {})]);
    assert.deepEqual(first.map((o) => o.body), ['ok', 'ok', 'ok']);
    assert.equal(up.connections(), 3);
    const idle = (pool as unknown as { idle: Array<{ socket: Socket }> }).idle;
    assert.equal(idle.length, 3);
    const newest = idle[2]!.socket;
    // The upstream closes the two older idle connections.
    const older = sockets.filter((s) => s.remotePort !== newest.localPort);
    assert.equal(older.length, 2);
    for (const s of older) s.destroy();
    await new Promise((r) => setTimeout(r, 1200));
    assert.equal(idle.length, 1);
    assert.equal(idle[0]!.socket, newest);
    held = [];
    assert.equal((await send(pool, {})).body, 'ok');
    assert.equal(up.connections(), 3);
  });

  it('a chunked body streamed to an upstream that reads it slowly arrives whole, framed right (ADR 0156)', async () => {
    // A chunk's size line that filled the socket's buffer used to end its write: its data and CRLF were never sent.
    const sent = randomBytes(4 * 1024 * 1024);
    const server = createHttpServer((req, res) => {
      const chunks: Buffer[] = [];
      req.pause();
      setTimeout(() => req.resume(), 300);
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => res.end(createHash('sha256').update(Buffer.concat(chunks)).digest('hex')));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    servers.push(server as unknown as Server);
    const pool = new H1Pool('127.0.0.1', (server.address() as { port: number }).port);
    pools.push(pool);
    const body = new PassThrough();
    for (let i = 0; i < sent.length; i += 64 * 1024) body.write(sent.subarray(i, i + 64 * 1024));
    body.end();
    const out = await send(pool, { method: 'POST', headers: { host: 'up' }, body: body as unknown as IncomingMessage });
    assert.equal(out.error, undefined);
    assert.equal(out.status, 200);
    assert.equal(out.body, createHash('sha256').update(sent).digest('hex'));
  });

  it('connection refused reads as ECONNREFUSED', async () => {
    const up = await upstream(() => undefined);
    const port = up.port;
    await new Promise((r) => up.server.close(r));
    const pool = new H1Pool('127.0.0.1', port);
    pools.push(pool);
    assert.equal((await send(pool, {})).error?.code, 'ECONNREFUSED');
  });
});
