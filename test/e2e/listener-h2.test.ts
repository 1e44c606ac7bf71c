// HTTP/2 from clients on HTTPS listeners (ADR 0141): ALPN, every kind of route over h2, request bodies with and
// without a length, trailers, bounds (streams, header list), resets releasing the upstream request, the access log.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { connect as h2connect, createSecureServer } from 'node:http2';
import type { ClientHttp2Session, ClientHttp2Stream, Http2SecureServer, IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http2';
import { createServer as createNetServer } from 'node:net';
import type { AddressInfo, Server as NetServer } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import type { TLSSocket } from 'node:tls';
import { after, before, describe, it } from 'node:test';
import { request } from 'undici';
import type { RunningGateway } from '../helpers/gateway.ts';
import { httpsBind, logRecords } from '../helpers/gateway.ts';
import { makeTestPki } from '../helpers/pki.ts';
import type { TestPki } from '../helpers/pki.ts';
import { h2Frame } from '../helpers/h2-frames.ts';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';
import { startGatewayOnFreePorts, waitFor, within } from './proxy-support.ts';

/** The ALPN protocol the bind picks for a client offering `protocols` (an error code when refused). */
function negotiated(port: number, ca: string, protocols: string[]): Promise<string> {
  return new Promise((resolve) => {
    const s = tlsConnect({ host: '127.0.0.1', port, servername: 'localhost', ca, ALPNProtocols: protocols }, () => {
      resolve(String(s.alpnProtocol));
      s.destroy();
    });
    s.on('error', (e: NodeJS.ErrnoException) => resolve(`error ${e.code}`));
  });
}

/** A TLS connection that negotiated h2, its preface and empty SETTINGS sent, for frames written by hand. */
function rawH2(port: number, ca: string): Promise<TLSSocket> {
  return new Promise((resolve, reject) => {
    const s = tlsConnect({ host: '127.0.0.1', port, servername: 'localhost', ca, ALPNProtocols: ['h2'] }, () => {
      s.write(Buffer.concat([Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'), h2Frame(0x4, 0x0, 0, Buffer.alloc(0))]));
      resolve(s);
    });
    s.on('error', reject);
    s.resume();
  });
}

interface H2Answer {
  headers: IncomingHttpHeaders;
  body: Buffer;
  trailers: IncomingHttpHeaders | undefined;
}

/** The status and text of the answer on a request stream the test writes itself. */
function answerOf(stream: ClientHttp2Stream): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    let status = 0;
    const chunks: Buffer[] = [];
    stream.on('response', (h) => (status = Number(h[':status'])));
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('end', () => resolve({ status, body: Buffer.concat(chunks).toString() }));
    stream.on('error', reject);
  });
}

/** One h2 exchange on `session`. */
function h2(session: ClientHttp2Session, headers: OutgoingHttpHeaders, body?: Buffer | Buffer[]): Promise<H2Answer> {
  return new Promise((resolve, reject) => {
    const endStream = body === undefined;
    const stream = session.request(headers, { endStream });
    const chunks: Buffer[] = [];
    let answer: IncomingHttpHeaders | undefined;
    let trailers: IncomingHttpHeaders | undefined;
    stream.on('response', (h) => (answer = h));
    stream.on('trailers', (t) => (trailers = t));
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('end', () => resolve({ headers: answer!, body: Buffer.concat(chunks), trailers }));
    stream.on('error', reject);
    stream.on('close', () => {
      if (answer === undefined) reject(new Error(`stream closed without an answer (code ${stream.rstCode})`));
    });
    if (Array.isArray(body)) {
      for (const part of body) stream.write(part);
      stream.end();
    } else if (body !== undefined) stream.end(body);
  });
}

/** An h2-only TLS upstream: answers the request's headers as JSON, then trailers. */
async function startH2Upstream(pki: TestPki): Promise<{ server: Http2SecureServer; port: number }> {
  const server = createSecureServer({ key: readFileSync(pki.serverKey), cert: readFileSync(pki.serverCert) });
  server.on('stream', (stream, headers) => {
    stream.respond({ ':status': 200, 'content-type': 'application/json' }, { waitForTrailers: true });
    stream.on('wantTrailers', () => stream.sendTrailers({ 'x-sum': 'abc', 'grpc-status': '0' }));
    stream.end(JSON.stringify(headers));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port };
}

describe('HTTP/2 on an HTTPS listener', () => {
  let pki: TestPki;
  let h2up: { server: Http2SecureServer; port: number };
  let trailing: TestUpstream;
  let upload: TestUpstream;
  let statuses: TestUpstream;
  /** Answers a path's first request 503 once it read the body whole, later ones 200; the bodies as each came. */
  let flaky: TestUpstream;
  const flakySeen: { headers: IncomingMessage['headers']; body: Buffer[] }[] = [];
  /** The live backend beside a refusing one: the bodies it got. */
  let second: TestUpstream;
  const secondSeen: Buffer[] = [];
  /** Resets every connection as it comes: a TLS handshake never completes. */
  let resetting: NetServer;
  /** The upload upstream: one entry per request, true when it ended before its body did; and chunks seen. */
  const uploadCut: boolean[] = [];
  const uploadBytes: number[] = [];
  let ca: string;
  let up: TestUpstream;
  let slow: TestUpstream;
  /** The slow upstream's requests: whether each ended before its answer was finished. */
  const slowClosed: boolean[] = [];
  let gw: RunningGateway;
  let port: number;
  let session: ClientHttp2Session;
  const origin = (): string => `https://localhost:${port}`;

  before(async () => {
    pki = makeTestPki({ serverName: 'localhost', serverAltNames: ['DNS:localhost', 'IP:127.0.0.1'], label: 'listener-h2' });
    ca = readFileSync(pki.ca, 'utf8');
    up = await startUpstream((req: IncomingMessage, res: ServerResponse, body: Buffer) => {
      res.writeHead(200, { 'content-type': 'application/json', 'x-upstream': 'yes', connection: 'keep-alive', 'keep-alive': 'timeout=5' });
      res.end(JSON.stringify({ method: req.method, url: req.url, headers: req.headers, rawHeaders: req.rawHeaders, bodyLength: body.length }));
    });
    // Answers the head, then a byte every 50 ms until the client goes.
    slow = await startUpstream(
      (_req, res) => {
        res.writeHead(200, { 'content-type': 'text/plain' });
        const tick = setInterval(() => res.write('.'), 50);
        res.on('close', () => {
          clearInterval(tick);
          slowClosed.push(!res.writableFinished);
        });
      },
      { bufferBody: false },
    );
    // `/statuses/<n>` answers status n (with a Content-Length where HTTP allows one); `/statuses/big` 4 MiB.
    statuses = await startUpstream((req, res) => {
      const what = req.url!.split('/')[2]!;
      if (what === 'big') {
        res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(4 << 20) });
        return void res.end(Buffer.alloc(4 << 20, 'b'));
      }
      const status = Number(what);
      res.writeHead(status, status === 204 || status === 304 ? { etag: '"x"' } : { 'content-type': 'text/plain', 'content-length': '2' });
      res.end(status === 204 || status === 304 ? undefined : 'ok');
    });
    // Reads a request body as it comes, answering once it ended.
    upload = await startUpstream(
      (req, res) => {
        req.on('data', () => uploadBytes.push(1));
        req.on('end', () => res.end('got it'));
        res.on('close', () => uploadCut.push(!req.complete));
      },
      { bufferBody: false },
    );
    flaky = await startUpstream(
      (req, res) => {
        const seen = { headers: req.headers, body: [] as Buffer[] };
        const n = flakySeen.push(seen);
        req.on('data', (c: Buffer) => seen.body.push(c));
        req.on('end', () => {
          res.writeHead(n === 1 ? 503 : 200);
          res.end(`attempt ${n}`);
        });
      },
      { bufferBody: false },
    );
    second = await startUpstream((_req, res, body) => {
      secondSeen.push(body);
      res.end(`second got ${body.length}`);
    });
    resetting = createNetServer((socket) => socket.resetAndDestroy());
    await new Promise<void>((resolve) => resetting.listen(0, '127.0.0.1', resolve));
    h2up = await startH2Upstream(pki);
    // HTTP/1.1, chunked, with trailers (reached through the lean client).
    trailing = await startUpstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain', trailer: 'x-sum' });
      res.write('part');
      res.addTrailers({ 'x-sum': 'h1' });
      res.end();
    });
    const backend = (u: TestUpstream) => [{ host: `127.0.0.1:${u.port}` }];
    const h2backend = [{ host: `127.0.0.1:${h2up.port}`, policies: { backendTLS: { root: pki.ca, alpn: ['h2'] } } }];
    ({ gw, ports: [port] } = await startGatewayOnFreePorts(1, ([p]) => ({
      config: { logging: { format: 'json' } },
      binds: [
        httpsBind(p!, { cert: pki.serverCert, key: pki.serverKey }, [
          { name: 'direct', matches: [{ path: { pathPrefix: '/direct' } }], policies: { directResponse: { status: 201, body: 'made here' } } },
          { name: 'slow', matches: [{ path: { pathPrefix: '/slow' } }], backends: backend(slow) },
          // A per-attempt deadline: the answer goes through a Reply (`forward`, reply-writer's `writeReply`).
          {
            name: 'hooked',
            matches: [{ path: { pathPrefix: '/hooked' } }],
            policies: {
              timeout: { backendRequestTimeout: '10s' },
              responseHeaderModifier: { set: { 'x-hooked': '1' } },
              requestHeaderModifier: { set: { 'x-added': 'yes' } },
            },
            backends: backend(up),
          },
          { name: 'echo', matches: [{ path: { pathPrefix: '/echo' } }], backends: backend(up) },
          { name: 'h2up', matches: [{ path: { pathPrefix: '/h2up' } }], backends: h2backend },
          {
            name: 'h2up-hooked',
            matches: [{ path: { pathPrefix: '/hooked-h2up' } }],
            policies: { timeout: { backendRequestTimeout: '10s' }, retry: { attempts: 1, codes: [503] }, responseHeaderModifier: { set: { 'x-hooked': '1' } } },
            backends: h2backend,
          },
          { name: 'upload', matches: [{ path: { pathPrefix: '/upload' } }], backends: backend(upload) },
          { name: 'retry-upload', matches: [{ path: { pathPrefix: '/retry-upload' } }], policies: { retry: { attempts: 1, codes: [503] } }, backends: backend(flaky) },
          // The refusing backend is picked first (almost always), the retry goes to the other.
          {
            name: 'refused-upload',
            matches: [{ path: { pathPrefix: '/refused-upload' } }],
            policies: { retry: { attempts: 1, codes: [] } },
            backends: [{ host: '127.0.0.1:1', weight: 1000 }, ...backend(second)],
          },
          // The same with a TLS backend refusing (undici's client, not the lean one).
          {
            name: 'refused-tls-upload',
            matches: [{ path: { pathPrefix: '/refused-tls-upload' } }],
            policies: { retry: { attempts: 1, codes: [] } },
            backends: [{ host: '127.0.0.1:1', weight: 1000, policies: { backendTLS: { root: pki.ca } } }, ...backend(second)],
          },
          // A TLS backend whose handshake is reset: nothing of the request was written either.
          {
            name: 'reset-tls-upload',
            matches: [{ path: { pathPrefix: '/reset-tls-upload' } }],
            policies: { retry: { attempts: 1, codes: [] } },
            backends: [{ host: `127.0.0.1:${(resetting.address() as AddressInfo).port}`, weight: 1000, policies: { backendTLS: { root: pki.ca } } }, ...backend(second)],
          },
          { name: 'statuses', matches: [{ path: { pathPrefix: '/statuses' } }], backends: backend(statuses) },
          { name: 'trailing', matches: [{ path: { pathPrefix: '/trailing' } }], backends: backend(trailing) },
        ]),
      ],
    })));
    session = h2connect(origin(), { ca });
    session.on('error', () => undefined);
  });
  after(async () => {
    session?.destroy();
    await gw?.stop();
    await up?.close();
    await slow?.close();
    await trailing?.close();
    await upload?.close();
    await flaky?.close();
    await second?.close();
    resetting?.close();
    await statuses?.close();
    h2up?.server.close();
    pki?.remove();
  });

  it('offers h2 and http/1.1 by ALPN: h2 when the client offers it, HTTP/1.1 otherwise', async () => {
    assert.equal(await negotiated(port, ca, ['h2']), 'h2');
    assert.equal(await negotiated(port, ca, ['h2', 'http/1.1']), 'h2');
    assert.equal(await negotiated(port, ca, ['http/1.1']), 'http/1.1');
    assert.match(await negotiated(port, ca, ['spdy/3']), /^error /);
  });

  it('proxies a GET: the upstream gets Host from :authority and no pseudo-header; the answer has no hop-by-hop header', async () => {
    const res = await h2(session, { ':path': '/echo/a?b=1', 'x-client': 'c' });
    assert.equal(res.headers[':status'], 200);
    assert.equal(res.headers['x-upstream'], 'yes');
    assert.equal(res.headers.connection, undefined);
    assert.equal(res.headers['keep-alive'], undefined);
    const seen = JSON.parse(res.body.toString()) as { method: string; url: string; headers: Record<string, string>; rawHeaders: string[] };
    assert.equal(seen.method, 'GET');
    assert.equal(seen.url, '/echo/a?b=1');
    assert.equal(seen.headers['x-client'], 'c');
    assert.equal(seen.headers['x-forwarded-proto'], 'https');
    assert.equal(seen.headers['x-forwarded-host'], `localhost:${port}`);
    assert.ok(!seen.rawHeaders.some((n, i) => i % 2 === 0 && n.startsWith(':')), seen.rawHeaders.join(' '));
    assert.equal(seen.headers['transfer-encoding'], undefined);
  });

  it('sends a request body with Content-Length, and one without (streamed, chunked to the HTTP/1.1 upstream)', async () => {
    const body = Buffer.alloc(100_000, 'x');
    const sized = await h2(session, { ':method': 'POST', ':path': '/echo/sized', 'content-length': String(body.length) }, body);
    assert.equal((JSON.parse(sized.body.toString()) as { bodyLength: number }).bodyLength, body.length);
    const parts = [Buffer.alloc(70_000, 'a'), Buffer.alloc(70_000, 'b'), Buffer.from('end')];
    const streamed = await h2(session, { ':method': 'POST', ':path': '/echo/streamed' }, parts);
    const seen = JSON.parse(streamed.body.toString()) as { bodyLength: number; headers: Record<string, string> };
    assert.equal(seen.bodyLength, 140_003);
    assert.equal(seen.headers['transfer-encoding'], 'chunked');
    const small = await h2(session, { ':method': 'PUT', ':path': '/echo/small' }, Buffer.from('hello'));
    assert.equal((JSON.parse(small.body.toString()) as { bodyLength: number }).bodyLength, 5);
  });

  it('on a route with `retry`, a body without a length streams at once and is retried from its copy (ADR 0152)', async () => {
    // It was read up to 64 KiB before anything went upstream (ADR 0125): the first part waited for the rest.
    const parts = [Buffer.alloc(3000, 'a'), Buffer.alloc(20_000, 'b'), Buffer.from('end')];
    const stream = session.request({ ':method': 'POST', ':path': '/retry-upload/x' });
    const answer = answerOf(stream);
    stream.write(parts[0]);
    await waitFor(() => flakySeen[0] !== undefined && flakySeen[0].body.length > 0, 5_000, 'the first part upstream');
    stream.end(Buffer.concat(parts.slice(1)));
    assert.deepEqual(await within(answer, 5_000, 'the answer'), { status: 200, body: 'attempt 2' });
    assert.equal(flakySeen.length, 2);
    for (const seen of flakySeen) assert.ok(Buffer.concat(seen.body).equals(Buffer.concat(parts)), 'every byte, in order');
    assert.equal(flakySeen[0]!.headers['transfer-encoding'], 'chunked');
    assert.equal(flakySeen[1]!.headers['content-length'], '23003');
  });

  it('on a route with `retry`, a body without a length still arriving when the first backend refused it (or reset its TLS handshake) goes whole to the other (ADR 0156)', async () => {
    for (const path of ['/refused-upload/x', '/refused-tls-upload/x', '/reset-tls-upload/x']) {
      const parts = [randomBytes(3000), randomBytes(20_000), randomBytes(7)];
      const stream = session.request({ ':method': 'POST', ':path': path });
      const answer = answerOf(stream);
      for (const part of parts) {
        stream.write(part);
        await new Promise((resolve) => setTimeout(resolve, 150));
      }
      stream.end();
      assert.deepEqual(await within(answer, 5_000, 'the answer'), { status: 200, body: 'second got 23007' }, path);
      assert.ok(secondSeen.pop()!.equals(Buffer.concat(parts)), 'every byte, in order');
    }
  });

  it('serves direct responses, policies through a Reply, 404s and HEAD', async () => {
    const direct = await h2(session, { ':path': '/direct' });
    assert.equal(direct.headers[':status'], 201);
    assert.equal(direct.body.toString(), 'made here');
    const hooked = await h2(session, { ':path': '/hooked/x' });
    assert.equal(hooked.headers[':status'], 200);
    assert.equal(hooked.headers['x-hooked'], '1');
    assert.equal((JSON.parse(hooked.body.toString()) as { headers: Record<string, string> }).headers['x-added'], 'yes');
    const missing = await h2(session, { ':path': '/nowhere' });
    assert.equal(missing.headers[':status'], 404);
    assert.match(missing.body.toString(), /route_not_found/);
    const head = await h2(session, { ':method': 'HEAD', ':path': '/echo/h' });
    assert.equal(head.headers[':status'], 200);
    assert.equal(head.body.length, 0);
  });

  it('Expect: 100-continue as over HTTP/1.1 (ADR 0185): 100 when the body is first read; answered without it, no 100', async () => {
    /** A POST with `expect: 100-continue` whose body is sent only once a 100 came: its answer, and whether one did. */
    const expecting = async (path: string): Promise<{ status: number; body: string; continued: boolean }> => {
      const stream = session.request({ ':method': 'POST', ':path': path, 'content-length': '5', expect: '100-continue' }, { endStream: false });
      let continued = false;
      stream.on('continue', () => {
        continued = true;
        stream.end('hello');
      });
      const answer = await within(answerOf(stream), 5_000, `the answer to ${path}`);
      return { ...answer, continued };
    };
    const proxied = await expecting('/echo/expect');
    assert.equal(proxied.status, 200);
    assert.ok(proxied.continued, 'invited once the upstream forward reads the body');
    const seen = JSON.parse(proxied.body) as { bodyLength: number; headers: Record<string, string> };
    assert.equal(seen.bodyLength, 5);
    assert.equal(seen.headers.expect, undefined, 'answered by the gateway, not forwarded');
    for (const [path, status] of [['/direct', 201], ['/nowhere', 404]] as const) {
      const refused = await expecting(path);
      assert.equal(refused.status, status, path);
      assert.equal(refused.continued, false, `${path}: the body is never read, so never invited`);
    }
  });

  it('relays 204, 304 and 404 answers, and a 4 MiB one read slowly (flow control)', async () => {
    for (const status of [204, 304, 404]) {
      const res = await h2(session, { ':path': `/statuses/${status}` });
      assert.equal(res.headers[':status'], status);
    }
    const big = await new Promise<number>((resolve, reject) => {
      const stream = session.request({ ':path': '/statuses/big' });
      let size = 0;
      stream.on('data', (c: Buffer) => {
        size += c.length;
        // Slower than the upstream: the gateway's writes wait for the client's window.
        stream.pause();
        setTimeout(() => stream.resume(), 1);
      });
      stream.on('end', () => resolve(size));
      stream.on('error', reject);
    });
    assert.equal(big, 4 << 20);
  });

  it('runs concurrent streams of one connection at once', async () => {
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => h2(session, { ':path': `/echo/c${i}` })));
    answers.forEach((a, i) => assert.equal((JSON.parse(a.body.toString()) as { url: string }).url, `/echo/c${i}`));
  });

  it('a malformed request is refused on its stream only: the connection serves the next one', async () => {
    const bad = await h2(session, { ':path': '/echo/x', ':authority': `localhost:${port}`, host: 'other.test' });
    assert.equal(bad.headers[':status'], 400);
    const fine = await h2(session, { ':path': '/echo/after' });
    assert.equal(fine.headers[':status'], 200);
  });

  it('HTTP/1.1 clients are served on the same port as before', async () => {
    const res = await request(`https://localhost:${port}/echo/h1`, {
      dispatcher: new (await import('undici')).Agent({ connect: { ca, ALPNProtocols: ['http/1.1'] } }),
    });
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers.connection, 'keep-alive');
    const seen = (await res.body.json()) as { headers: Record<string, string> };
    assert.equal(seen.headers.host, `localhost:${port}`);
  });

  it('advertises its bounds: 100 concurrent streams, a 16 KiB header list', async () => {
    await waitFor(() => session.remoteSettings.maxConcurrentStreams !== undefined, 5_000, 'the settings');
    assert.equal(session.remoteSettings.maxConcurrentStreams, 100);
    assert.equal(session.remoteSettings.maxHeaderListSize, 16 * 1024);
  });

  it('a header list over the limit never reaches routing; the connection goes on', async () => {
    // The client would refuse to send past the advertised limit itself: this one ignores it, as a hostile one would.
    const own = h2connect(origin(), { ca, settings: { maxHeaderListSize: 1 << 20 }, maxSendHeaderBlockLength: 1 << 20 } as Parameters<typeof h2connect>[1]);
    own.on('error', () => undefined);
    try {
      const before = up.received.length;
      const outcome = await h2(own, { ':path': '/echo/big', 'x-big': 'y'.repeat(20_000) }).then(
        (a) => `status ${String(a.headers[':status'])}`,
        (e: Error) => `failed ${e.message}`,
      );
      assert.equal(outcome, 'status 431');
      assert.equal(up.received.length, before);
      const fine = await h2(session, { ':path': '/echo/after-big' });
      assert.equal(fine.headers[':status'], 200);
    } finally {
      own.destroy();
    }
  });

  it('a stream reset mid-download releases the upstream request', async () => {
    const count = slowClosed.length;
    await new Promise<void>((resolve, reject) => {
      const stream = session.request({ ':path': '/slow/x' });
      stream.on('data', () => {
        stream.close(0x8); // CANCEL
        resolve();
      });
      stream.on('error', reject);
    });
    await waitFor(() => slowClosed.length > count, 5_000, 'the upstream request to close');
    assert.equal(slowClosed[count], true);
    const fine = await h2(session, { ':path': '/echo/after-reset' });
    assert.equal(fine.headers[':status'], 200);
  });

  // node's client ends a stream's body (END_STREAM) before it resets it: this client sends the reset alone, as curl,
  // browsers and gRPC's other clients do.
  it('a stream reset mid-upload releases the upstream request, which never sees its body end', async () => {
    const count = uploadCut.length;
    const chunks = uploadBytes.length;
    const raw = await rawH2(port, ca);
    try {
      const authority = Buffer.from(`localhost:${port}`);
      const path = Buffer.from('/upload/raw');
      // HPACK: :method POST (static 3), :scheme https (7), :path and :authority as literals with indexed names.
      const block = Buffer.concat([Buffer.from([0x83, 0x87, 0x04, path.length]), path, Buffer.from([0x01, authority.length]), authority]);
      raw.write(h2Frame(0x1, 0x4, 1, block));
      raw.write(h2Frame(0x0, 0x0, 1, Buffer.alloc(10_000, 'u')));
      await waitFor(() => uploadBytes.length > chunks, 5_000, 'the upload to reach the upstream');
      const rst = Buffer.alloc(4);
      rst.writeUInt32BE(0x8);
      raw.write(h2Frame(0x3, 0x0, 1, rst));
      await waitFor(() => uploadCut.length > count, 5_000, 'the upstream request to close');
      assert.equal(uploadCut[count], true);
    } finally {
      raw.destroy();
    }
  });

  it('at most 100 streams at once: the rest are refused (REFUSED_STREAM) before any routing', async () => {
    const raw = await rawH2(port, ca);
    const frames: { type: number; code: number }[] = [];
    let buffered = Buffer.alloc(0);
    raw.on('data', (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      while (buffered.length >= 9 && buffered.length >= 9 + buffered.readUIntBE(0, 3)) {
        const length = buffered.readUIntBE(0, 3);
        const type = buffered[3]!;
        // RST_STREAM: the code; GOAWAY: last stream id, then the code.
        const code = type === 0x3 ? buffered.readUInt32BE(9) : type === 0x7 ? buffered.readUInt32BE(13) : -1;
        frames.push({ type, code });
        buffered = buffered.subarray(9 + length);
      }
    });
    try {
      const authority = Buffer.from(`localhost:${port}`);
      const path = Buffer.from('/echo/many');
      // POST with `content-length: 10` (static name 28) and no body: each stream waits, open.
      const block = Buffer.concat([Buffer.from([0x83, 0x87, 0x04, path.length]), path, Buffer.from([0x01, authority.length]), authority, Buffer.from([0x0f, 0x0d, 0x02]), Buffer.from('10')]);
      for (let id = 1; id < 2 * 300; id += 2) raw.write(h2Frame(0x1, 0x4, id, block));
      await waitFor(() => frames.filter((f) => f.type === 0x3).length >= 200, 10_000, 'the refusals');
    } finally {
      raw.destroy();
    }
    assert.equal(frames.filter((f) => f.type === 0x3 && f.code === 0x7).length, 200);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const served = logRecords(gw).filter((r) => r['http.path'] === '/echo/many').length;
    assert.ok(served <= 100, `${served} streams served`);
  });

  // The streams wait for a body that never comes (read before it is forwarded, no upstream request yet): each reset
  // cancels work in flight, the attack's pattern. node's client does not notice its connection closed under the
  // flood, so the gateway's side is counted: how many of the streams it started serving (each logs a line).
  it('rapid reset (CVE-2023-44487): a client resetting stream after stream has its connection closed', async () => {
    const own = h2connect(origin(), { ca });
    own.on('error', () => undefined);
    const served = (): number => logRecords(gw).filter((r) => r['http.path'] === '/echo/flood').length;
    let sent = 0;
    await within(
      new Promise<void>((resolve) => {
        const burst = (): void => {
          for (let i = 0; i < 50 && !own.destroyed && !own.closed; i++) {
            sent++;
            try {
              const r = own.request({ ':method': 'POST', ':path': '/echo/flood', 'content-length': '10' }, { endStream: false });
              r.on('error', () => undefined);
              r.close(0x8);
            } catch {
              return resolve();
            }
          }
          // A pause lets the resets go out (node's client holds streams past the server's 100 until slots free).
          if (sent < 3_000 && !own.destroyed) setTimeout(burst, 1);
          else resolve();
        };
        burst();
      }),
      30_000,
      'the resets',
    );
    own.destroy();
    await waitFor(() => served() > 0, 5_000, 'the log lines');
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.ok(served() <= 300, `${served()} of ${sent} reset streams served`);
    const fine = await h2(session, { ':path': '/echo/after-flood' });
    assert.equal(fine.headers[':status'], 200);
  });

  it('CONNECT (and so WebSocket over h2) is refused on its stream (405), logged with its authority and counted as a local answer', async () => {
    const status = await within(
      new Promise<number | string>((resolve) => {
        const stream = session.request({ ':method': 'CONNECT', ':authority': 'example.test:443' });
        stream.on('response', (h) => resolve(Number(h[':status'])));
        stream.on('error', (e: Error) => resolve(e.message));
        stream.on('close', () => resolve(`closed ${stream.rstCode}`));
      }),
      5_000,
      'CONNECT',
    );
    assert.equal(status, 405);
    // node:http2 answered it before the pipeline: no log line, nothing counted (ADR 0158).
    await waitFor(() => logRecords(gw).some((r) => r['http.method'] === 'CONNECT'), 5_000, 'the CONNECT log line');
    const line = logRecords(gw).find((r) => r['http.method'] === 'CONNECT')!;
    assert.equal(line['http.status'], 405);
    assert.equal(line['http.version'], 'HTTP/2');
    assert.equal(line['http.host'], 'example.test:443');
    // No `:path`: the target is the authority, as HTTP/1.1's request line has it (ADR 0166), not `/`.
    assert.equal(line['http.path'], 'example.test:443');
    const metrics = await (await fetch(`${gw.statsUrl}/metrics`)).text();
    assert.ok(metrics.split('\n').some((l) => l.startsWith('switchyard_requests_total{') && l.includes('status="405"')), 'counted with its status');
  });

  it("relays the upstream's trailers and forwards te: trailers (direct forward, and through a Reply)", async () => {
    for (const path of ['/h2up/t', '/hooked-h2up/t']) {
      const res = await h2(session, { ':path': path, te: 'trailers' });
      assert.equal(res.headers[':status'], 200, path);
      const seen = JSON.parse(res.body.toString()) as Record<string, string>;
      assert.equal(seen.te, 'trailers', path);
      assert.equal(seen[':authority'], `localhost:${port}`, path);
      assert.equal(res.trailers?.['x-sum'], 'abc', path);
      assert.equal(res.trailers?.['grpc-status'], '0', path);
    }
    const hooked = await h2(session, { ':path': '/hooked-h2up/again' });
    assert.equal(hooked.headers['x-hooked'], '1');
    // A chunked HTTP/1.1 answer's trailers too.
    const h1 = await h2(session, { ':path': '/trailing/x' });
    assert.equal(h1.body.toString(), 'part');
    assert.equal(h1.trailers?.['x-sum'], 'h1');
  });

  it('the access log says HTTP/2', async () => {
    await h2(session, { ':path': '/echo/logged' });
    await waitFor(() => logRecords(gw).some((r) => r['http.path'] === '/echo/logged'), 5_000, 'the log line');
    const line = logRecords(gw).find((r) => r['http.path'] === '/echo/logged')!;
    assert.equal(line['http.version'], 'HTTP/2');
    assert.equal(line['http.status'], 200);
    assert.equal(line['http.host'], `localhost:${port}`);
    // Counted as any request: the route's series, its status.
    const metrics = await (await fetch(`${gw.statsUrl}/metrics`)).text();
    assert.ok(metrics.split('\n').some((l) => l.startsWith('switchyard_requests_total{') && l.includes('route="echo"') && l.includes('status="200"')), 'the route\'s series');
  });
});
