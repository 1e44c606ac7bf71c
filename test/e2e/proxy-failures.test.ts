import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import type { Server, Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { randomBytes } from 'node:crypto';
import { Client, request } from 'undici';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';
import { startGatewayOnFreePorts, waitFor, within } from './proxy-support.ts';

/** A TCP server that plays a broken HTTP upstream: `behave` gets each connection once the request head arrived. */
async function brokenUpstream(behave: (socket: Socket) => void): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    let head = '';
    const onData = (c: Buffer): void => {
      head += c.toString('latin1');
      if (head.includes('\r\n\r\n')) {
        socket.off('data', onData);
        behave(socket);
      }
    };
    socket.on('data', onData);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as { port: number }).port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

interface ErrorBody {
  error: { type: string; message: string };
}

describe('upstream failures', () => {
  let gw: RunningGateway;
  let healthy: TestUpstream;
  let early: TestUpstream;
  let port: number;
  let closedPort: number;
  const broken: { port: number; close(): Promise<void> }[] = [];

  before(async () => {
    healthy = await startUpstream();
    // Answers 413 at once, without reading the request body.
    early = await startUpstream(
      (_req, res) => {
        res.writeHead(413, { 'content-type': 'text/plain' });
        res.end('too big');
      },
      { bufferBody: false },
    );
    closedPort = await freePort(); // nothing listens here
    // Sends half of a content-length body, then resets the connection.
    broken.push(
      await brokenUpstream((s) => {
        s.write('HTTP/1.1 200 OK\r\ncontent-type: application/octet-stream\r\ncontent-length: 100000\r\n\r\n');
        s.write(Buffer.alloc(40_000, 1), () => setTimeout(() => s.resetAndDestroy(), 20));
      }),
    );
    // Same with a chunked body that never gets its final chunk.
    broken.push(
      await brokenUpstream((s) => {
        s.write('HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n');
        setTimeout(() => s.resetAndDestroy(), 50);
      }),
    );
    // Resets before sending anything.
    broken.push(await brokenUpstream((s) => s.resetAndDestroy()));
    // Closes cleanly without answering.
    broken.push(await brokenUpstream((s) => s.end()));
    // Answers garbage.
    broken.push(await brokenUpstream((s) => s.end('this is not HTTP\r\n\r\n')));
    // A header name with a space: llhttp's HPE_INVALID_HEADER_TOKEN.
    broken.push(await brokenUpstream((s) => s.end('HTTP/1.1 200 OK\r\nbad header: x\r\ncontent-length: 0\r\n\r\n')));
    // Accepts the request and never answers.
    broken.push(await brokenUpstream(() => undefined));
    const route = (name: string, backends: unknown[] | undefined) => ({ name, matches: [{ path: { pathPrefix: `/${name}` } }], ...(backends ? { backends } : {}) });
    ({ gw, ports: [port] } = await startGatewayOnFreePorts(1, ([port]) => ({
      config: { defaultTimeouts: { backendRequestTimeout: '500ms' } },
      binds: [
        {
          port,
          listeners: [
            {
              routes: [
                route('ok', [{ host: `127.0.0.1:${healthy.port}` }]),
                route('down', [{ host: `127.0.0.1:${closedPort}` }]),
                route('reset-mid-body', [{ host: `127.0.0.1:${broken[0]!.port}` }]),
                route('reset-mid-chunked', [{ host: `127.0.0.1:${broken[1]!.port}` }]),
                route('reset-before-head', [{ host: `127.0.0.1:${broken[2]!.port}` }]),
                route('close-before-head', [{ host: `127.0.0.1:${broken[3]!.port}` }]),
                route('garbage', [{ host: `127.0.0.1:${broken[4]!.port}` }]),
                route('nothing', undefined),
                route('early', [{ host: `127.0.0.1:${early.port}` }]),
                route('bad-token', [{ host: `127.0.0.1:${broken[5]!.port}` }]),
                route('silent', [{ host: `127.0.0.1:${broken[6]!.port}` }]),
                { ...route('silent-timeout', [{ host: `127.0.0.1:${broken[6]!.port}` }]), policies: { timeout: { backendRequestTimeout: '300ms' } } },
              ],
            },
          ],
        },
      ],
    })));
  });
  after(async () => {
    await gw?.stop();
    await healthy?.close();
    await early?.close();
    for (const b of broken) await b?.close();
  });

  /** Every failure is followed by a normal request: the gateway must still be serving. */
  async function stillServing(): Promise<void> {
    const res = await within(request(`${gw.url(port)}/ok/after`), 5000, 'follow-up request');
    assert.equal(res.statusCode, 200);
    await res.body.dump();
  }

  async function jsonError(path: string): Promise<{ status: number; contentType: string; body: ErrorBody }> {
    const res = await within(request(`${gw.url(port)}${path}`), 10_000, path);
    return { status: res.statusCode, contentType: String(res.headers['content-type']), body: (await res.body.json()) as ErrorBody };
  }

  it('upstream down (closed port) → 503 upstream_unavailable JSON', async () => {
    const res = await jsonError('/down/x');
    assert.equal(res.status, 503);
    assert.match(res.contentType, /^application\/json/);
    assert.equal(res.body.error.type, 'upstream_unavailable');
    assert.equal(typeof res.body.error.message, 'string');
    await stillServing();
  });

  it('upstream down, with a request body → 503 too', async () => {
    const res = await within(request(`${gw.url(port)}/down/x`, { method: 'POST', body: 'x'.repeat(10_000) }), 10_000, 'POST');
    assert.equal(res.statusCode, 503);
    assert.equal(((await res.body.json()) as ErrorBody).error.type, 'upstream_unavailable');
    await stillServing();
  });

  it('upstream resets mid-body (content-length) → the client sees an error, not a hang', async () => {
    const res = await within(request(`${gw.url(port)}/reset-mid-body`), 5000, 'response head');
    assert.equal(res.statusCode, 200);
    await assert.rejects(within(res.body.arrayBuffer(), 5000, 'truncated body'), (err: Error) => !/nothing after/.test(err.message));
    await stillServing();
  });

  it('upstream resets mid-body (chunked) → the client sees an error, not a clean end', async () => {
    const res = await within(request(`${gw.url(port)}/reset-mid-chunked`), 5000, 'response head');
    assert.equal(res.statusCode, 200);
    await assert.rejects(within(res.body.text(), 5000, 'truncated body'), (err: Error) => !/nothing after/.test(err.message));
    await stillServing();
  });

  it('upstream resets before the response head → 502 JSON', async () => {
    const res = await jsonError('/reset-before-head');
    assert.equal(res.status, 502);
    assert.match(res.contentType, /^application\/json/);
    assert.equal(res.body.error.type, 'bad_gateway');
    await stillServing();
  });

  it('upstream closes without answering → 502 JSON', async () => {
    const res = await jsonError('/close-before-head');
    assert.equal(res.status, 502);
    assert.equal(res.body.error.type, 'bad_gateway');
    await stillServing();
  });

  it('upstream answers something that is not HTTP → 502 JSON', async () => {
    const res = await jsonError('/garbage');
    assert.equal(res.status, 502);
    assert.equal(res.body.error.type, 'bad_gateway');
    await stillServing();
  });

  it('failure bodies do not name the upstream address; the access log does (as Envoy\'s local replies)', async () => {
    const cases: [string, number, number, RegExp][] = [
      ['/down/x', 503, closedPort, /ECONNREFUSED/],
      ['/reset-before-head/x', 502, broken[2]!.port, /./],
      ['/bad-token/x', 502, broken[5]!.port, /HPE_INVALID_HEADER_TOKEN/],
      ['/silent/x', 504, broken[6]!.port, /did not answer within 500ms/],
      ['/silent-timeout/x', 504, broken[6]!.port, /did not answer within 300ms/],
    ];
    for (const [path, status, upstreamPort, detail] of cases) {
      const res = await jsonError(path);
      assert.equal(res.status, status, path);
      const text = JSON.stringify(res.body);
      assert.doesNotMatch(text, /127\.0\.0\.1/, `${path}: ${text}`);
      assert.ok(!text.includes(String(upstreamPort)), `${path}: ${text}`);
      assert.match(res.body.error.message, detail, path);
      // The operator's access log line keeps the upstream.
      await waitFor(() => gw.logs.some((l) => l.includes(`path=${path}`) && l.includes(`127.0.0.1:${upstreamPort}`)), 2000, `access log of ${path} names the upstream`);
    }
    await stillServing();
  });

  it('route with no backends and no local reply → 500 JSON', async () => {
    const res = await jsonError('/nothing');
    assert.equal(res.status, 500);
    assert.match(res.contentType, /^application\/json/);
    assert.equal(res.body.error.type, 'no_backend');
    await stillServing();
  });

  it('a large upload that fails (upstream down or answering early) does not stall the client connection', async () => {
    // One connection at a time: the follow-up must not get stuck behind (or reset with) the unfinished upload.
    // The gateway cannot read the rest of that body any more, so it must answer `Connection: close`.
    const client = new Client(gw.url(port), { pipelining: 1 });
    try {
      for (const path of ['/down/upload', '/early/upload', '/down/upload', '/early/upload']) {
        const res = await within(client.request({ path, method: 'POST', body: randomBytes(8 * 1024 * 1024) }), 5000, `POST ${path}`);
        assert.equal(res.statusCode, path.startsWith('/down') ? 503 : 413);
        assert.equal(res.headers.connection, 'close');
        await within(res.body.dump(), 5000, 'error body');
        const next = await within(client.request({ path: '/ok/next', method: 'GET' }), 5000, `GET after ${path}`);
        assert.equal(next.statusCode, 200);
        await next.body.dump();
      }
    } finally {
      await client.close();
    }
  });

  it('many concurrent failures of every kind, then the gateway still serves', async () => {
    const paths = ['/down', '/reset-mid-body', '/reset-mid-chunked', '/reset-before-head', '/close-before-head', '/garbage', '/nothing', '/ok'];
    await Promise.all(
      Array.from({ length: 80 }, async (_, i) => {
        try {
          const res = await request(`${gw.url(port)}${paths[i % paths.length]}`);
          await res.body.dump();
        } catch {
          // truncated responses error on the client; that is expected here
        }
      }),
    );
    await stillServing();
    // Failures are visible in the access log with their status.
    await new Promise((resolve) => setImmediate(resolve));
    assert.ok(gw.logs.some((l) => / request .*route=down .*http\.status=503/.test(l)), 'access log has the 503');
  });
});
