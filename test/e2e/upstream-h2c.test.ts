// HTTP/2 in cleartext to an upstream (h2c, prior knowledge; ADR 0151): a backend's `http: { version: HTTP/2.0 }`.
// grpc-js clients over an HTTPS listener (h2) to a grpc-js server without TLS: unary, server streaming, an error
// status as sent, directly and through a Reply; HTTP/1.1 clients through the same routes; one pooled h2 session.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as http from 'node:http';
import * as http2 from 'node:http2';
import * as https from 'node:https';
import * as tls from 'node:tls';
import { after, before, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import type { RunningGateway } from '../helpers/gateway.ts';
import { httpsBind } from '../helpers/gateway.ts';
import { makeTestPki } from '../helpers/pki.ts';
import type { TestPki } from '../helpers/pki.ts';
import { assertStreamsAndStatuses, chatInTurns, echoClient, fromJson, startEchoServer, toJson, unary } from '../helpers/grpc-echo.ts';
import type { EchoClient } from '../helpers/grpc-echo.ts';
import { startGatewayOnFreePorts, waitFor, within } from './proxy-support.ts';

/** A plain h2c server: records each request's headers and counts its sessions (connections). */
async function startH2cServer(): Promise<{ server: http2.Http2Server; port: number; seen: http2.IncomingHttpHeaders[]; sessions: () => number; slow: { opened: number; closed: number } }> {
  const seen: http2.IncomingHttpHeaders[] = [];
  const slow = { opened: 0, closed: 0 };
  let sessions = 0;
  const server = http2.createServer();
  server.on('session', () => sessions++);
  let flaky = 0;
  server.on('stream', (stream, headers) => {
    seen.push(headers);
    // Never answers: the route's deadline must end it (and reset the stream).
    if (headers[':path'] === '/plain/slow') {
      slow.opened++;
      stream.on('close', () => slow.closed++);
      return;
    }
    // An answer of `n` header fields (/plain/headers/<n>).
    const many = /^\/plain\/headers\/(\d+)$/.exec(String(headers[':path']));
    if (many) {
      const answer: http2.OutgoingHttpHeaders = { ':status': 200 };
      for (let i = 0; i < Number(many[1]); i++) answer[`x-h${i}`] = 'v';
      stream.respond(answer);
      stream.end('many');
      return;
    }
    // Every other call fails with 503: a retried request reaches the upstream twice.
    if (headers[':path'] === '/plain/flaky' && flaky++ % 2 === 0) {
      stream.respond({ ':status': 503 });
      stream.end('try again');
      return;
    }
    const chunks: Buffer[] = [];
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('end', () => {
      stream.respond({ ':status': 200, 'content-type': 'text/plain' }, { waitForTrailers: true });
      stream.on('wantTrailers', () => stream.sendTrailers({ 'x-done': 'yes' }));
      stream.end(`h2c says ${headers[':method']} ${headers[':path']} ${Buffer.concat(chunks).toString()}`);
    });
  });
  const port = await new Promise<number>((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port)));
  return { server, port, seen, sessions: () => sessions, slow };
}

/** An HTTP/1.1 request over TLS (node:https offers no ALPN: the listener speaks HTTP/1.1 to it). */
function h1Request(port: number, ca: Buffer, path: string, headers: Record<string, string>, body: Buffer | string): Promise<{ status: number; headers: Record<string, unknown>; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = https.request({ host: '127.0.0.1', servername: 'localhost', port, path, method: 'POST', ca, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** A gRPC message frame: uncompressed flag, 4-byte length, then the message. */
const frame = (message: Buffer): Buffer => {
  const head = Buffer.alloc(5);
  head.writeUInt32BE(message.length, 1);
  return Buffer.concat([head, message]);
};

describe('HTTP/2 in cleartext to upstreams (h2c)', () => {
  let pki: TestPki;
  let ca: Buffer;
  let grpcUp: { server: grpc.Server; port: number };
  /** The same service over TLS, reached with `backendTLS` (no `alpn`) and `http.version: HTTP/2.0`. */
  let grpcTlsUp: { server: grpc.Server; port: number };
  let plainUp: Awaited<ReturnType<typeof startH2cServer>>;
  /** An HTTP/1.1-only server configured as h2c by mistake. */
  let h1Only: http.Server;
  let gw: RunningGateway;
  let port: number;
  let replyPort: number;
  let plainPort: number;
  let client: EchoClient;
  /** The same routes with a deadline and retries: answers come through a Reply (`forward`). */
  let viaReply: EchoClient;

  before(async () => {
    pki = makeTestPki({ serverName: 'localhost', serverAltNames: ['DNS:localhost', 'IP:127.0.0.1'], label: 'upstream-h2c' });
    ca = readFileSync(pki.ca);
    grpcUp = await startEchoServer(grpc.ServerCredentials.createInsecure());
    grpcTlsUp = await startEchoServer(grpc.ServerCredentials.createSsl(null, [{ private_key: readFileSync(pki.serverKey), cert_chain: readFileSync(pki.serverCert) }], false));
    plainUp = await startH2cServer();
    h1Only = http.createServer((_req, res) => res.end('h1'));
    await new Promise<void>((resolve) => h1Only.listen(0, '127.0.0.1', resolve));
    const h1OnlyPort = (h1Only.address() as { port: number }).port;
    const h2c = { http: { version: 'HTTP/2.0' } };
    const routes = (policies: Record<string, unknown>) => [
        { name: 'grpc', matches: [{ path: { pathPrefix: '/test.Echo/' } }], policies, backends: [{ host: `127.0.0.1:${grpcUp.port}`, policies: h2c }] },
        // The policy on the route, not the backend: it applies to the route's backends.
        { name: 'plain', matches: [{ path: { pathPrefix: '/plain/' } }], policies: { ...policies, ...h2c }, backends: [{ host: `127.0.0.1:${plainUp.port}` }] },
        {
          name: 'grpc-tls',
          // Its own path, rewritten to the service's.
          matches: [{ path: { pathPrefix: '/tls.Echo/' } }],
          policies: { ...policies, urlRewrite: { path: { prefix: '/test.Echo/' } } },
          backends: [{ host: `127.0.0.1:${grpcTlsUp.port}`, policies: { ...h2c, backendTLS: { root: pki.ca, hostname: 'localhost' } } }],
        },
        { name: 'h1only', matches: [{ path: { pathPrefix: '/h1only/' } }], policies: { ...policies, ...h2c }, backends: [{ host: `127.0.0.1:${h1OnlyPort}` }] },
    ];
    const tlsFiles = { cert: pki.serverCert, key: pki.serverKey };
    ({ gw, ports: [port, replyPort, plainPort] } = await startGatewayOnFreePorts(3, ([p, q, r]) => ({
      binds: [
        httpsBind(p!, tlsFiles, routes({})),
        httpsBind(q!, tlsFiles, routes({ timeout: { backendRequestTimeout: '1s' }, retry: { attempts: 2, codes: [503] } })),
        // A cleartext listener: HTTP/1.1 clients on the lean server side (ADR 0088) and the direct forward.
        { port: r!, listeners: [{ routes: routes({}) }] },
      ],
    })));
    client = echoClient(`localhost:${port}`, grpc.credentials.createSsl(ca));
    viaReply = echoClient(`localhost:${replyPort}`, grpc.credentials.createSsl(ca));
  });
  after(async () => {
    client?.close();
    viaReply?.close();
    await gw?.stop();
    grpcUp?.server.forceShutdown();
    grpcTlsUp?.server.forceShutdown();
    plainUp?.server.close();
    h1Only?.closeAllConnections();
    h1Only?.close();
    pki?.remove();
  });

  it('a unary call reaches the cleartext gRPC server: the answer and its trailers, directly and through a Reply', async () => {
    for (const c of [client, viaReply]) {
      const answer = await within(unary(c, 'Echo', { hello: 'world' }), 10_000, 'the unary call');
      assert.equal(answer.error, undefined, answer.error?.message);
      assert.deepEqual(answer.value, { echo: { hello: 'world' } });
      assert.deepEqual(answer.trailers?.get('x-trailer'), ['from-upstream']);
    }
  });

  it("server streaming delivers every message; an upstream's error status reaches the client as sent", async () => {
    await assertStreamsAndStatuses([client, viaReply], within);
  });

  // Also on the `retry` route: its body streams as it arrives, a copy kept for a retry (ADR 0152). It was read up to
  // 64 KiB before anything was sent (ADR 0125), so a call that waits for an answer before sending more stalled (408).
  it('a bidirectional call goes in turns: each message reaches the server before the call ends', async () => {
    for (const c of [client, viaReply]) {
      const heard = await within(chatInTurns(c, [1, 2, 3]), 10_000, 'the bidirectional call');
      assert.deepEqual(heard, [{ heard: 1 }, { heard: 2 }, { heard: 3 }]);
    }
  });

  it('an HTTP/1.1 client through the same route gets the gRPC answer (the trailers stay behind)', async () => {
    for (const p of [port, replyPort]) {
      const res = await within(h1Request(p, ca, '/test.Echo/Echo', { 'content-type': 'application/grpc' }, frame(toJson({ from: 'h1' }))), 10_000, 'the h1 call');
      assert.equal(res.status, 200);
      assert.match(String(res.headers['content-type']), /^application\/grpc/);
      assert.deepEqual(fromJson(res.body.subarray(5)), { echo: { from: 'h1' } });
    }
  });

  it('HTTP/1.1 requests are sent as h2 streams over one pooled session, with :scheme http and the Host as :authority', async () => {
    const before = plainUp.seen.length;
    for (let i = 0; i < 3; i++) {
      const res = await within(h1Request(port, ca, `/plain/${i}`, { 'content-type': 'text/plain' }, `body ${i}`), 10_000, 'the h1 call');
      assert.equal(res.status, 200);
      assert.equal(res.body.toString(), `h2c says POST /plain/${i} body ${i}`);
    }
    const seen = plainUp.seen.slice(before);
    assert.equal(seen.length, 3);
    for (const h of seen) {
      assert.equal(h[':scheme'], 'http');
      // An IP-literal backend keeps the client's Host (authority `request`), as over HTTP/1.1.
      assert.equal(h[':authority'], `127.0.0.1:${port}`);
      assert.equal(h.host, undefined);
      assert.equal(h.connection, undefined);
      assert.equal(h['transfer-encoding'], undefined);
    }
    assert.equal(plainUp.sessions(), 1, 'one h2c connection, reused');
  });

  it("an h2 client's `te: trailers` is forwarded and the upstream's trailers come back", async () => {
    const session = http2.connect(`https://localhost:${port}`, { ca });
    try {
      const answer = await within(
        new Promise<{ status: number; body: string; trailers: http2.IncomingHttpHeaders }>((resolve, reject) => {
          const stream = session.request({ ':method': 'POST', ':path': '/plain/te', te: 'trailers' });
          let status = 0;
          let trailers: http2.IncomingHttpHeaders = {};
          let body = '';
          stream.on('response', (h) => (status = Number(h[':status'])));
          stream.on('trailers', (t) => (trailers = t));
          stream.on('data', (c: Buffer) => (body += c.toString()));
          stream.on('end', () => resolve({ status, body, trailers }));
          stream.on('error', reject);
          stream.end('x');
        }),
        10_000,
        'the h2 call',
      );
      assert.equal(answer.status, 200);
      assert.equal(answer.body, 'h2c says POST /plain/te x');
      assert.equal(answer.trailers['x-done'], 'yes');
      assert.equal(plainUp.seen.at(-1)!.te, 'trailers');
    } finally {
      session.close();
    }
  });

  it("the route's deadline ends a call the h2c upstream never answers (504), as for HTTP/1.1 upstreams", async () => {
    const started = performance.now();
    const res = await within(h1Request(replyPort, ca, '/plain/slow', {}, ''), 10_000, 'the slow call');
    assert.equal(res.status, 504);
    assert.ok(performance.now() - started < 5_000);
    // Each attempt's stream is reset, not left open on the shared session.
    assert.ok(plainUp.slow.opened >= 1);
    await waitFor(() => plainUp.slow.closed === plainUp.slow.opened, 5_000, 'the abandoned streams to close');
  });

  it('a retried request is sent again on the h2c session: the 503 is not what the client sees', async () => {
    const before = plainUp.seen.length;
    const res = await within(h1Request(replyPort, ca, '/plain/flaky', {}, 'again'), 10_000, 'the flaky call');
    assert.equal(res.status, 200);
    assert.equal(res.body.toString(), 'h2c says POST /plain/flaky again');
    assert.equal(plainUp.seen.length - before, 2);
  });

  it('a WebSocket upgrade goes over its own HTTP/1.1 connection: an upstream that speaks only h2 is a 502, not a hang', async () => {
    const head = await within(
      new Promise<string>((resolve, reject) => {
        const socket = tls.connect({ host: '127.0.0.1', port, servername: 'localhost', ca, ALPNProtocols: ['http/1.1'] }, () =>
          socket.write(
            'GET /plain/ws HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n' +
              'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n',
          ),
        );
        let got = '';
        socket.on('data', (d: Buffer) => {
          got += d.toString('latin1');
          if (got.includes('\r\n\r\n')) {
            socket.destroy();
            resolve(got);
          }
        });
        socket.on('error', reject);
      }),
      10_000,
      'the upgrade answer',
    );
    assert.match(head, /^HTTP\/1\.1 502 /);
  });

  it('an upstream that speaks only HTTP/1.1 behind `HTTP/2.0` is a prompt 502, not a hang', async () => {
    for (const p of [port, replyPort]) {
      const res = await within(h1Request(p, ca, '/h1only/x', {}, ''), 10_000, 'the misconfigured call');
      assert.equal(res.status, 502);
    }
  });

  it('a cleartext HTTP/1.1 listener forwards to the h2c upstream: small and large bodies, keep-alive', async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const post = (path: string, body: Buffer | string, headers: Record<string, string> = {}) =>
        new Promise<{ status: number; body: string }>((resolve, reject) => {
          const req = http.request({ host: '127.0.0.1', port: plainPort, path, method: 'POST', agent, headers }, (res) => {
            let text = '';
            res.setEncoding('latin1');
            res.on('data', (c: string) => (text += c));
            res.on('end', () => resolve({ status: res.statusCode!, body: text }));
          });
          req.on('error', reject);
          req.end(body);
        });
      const small = await within(post('/plain/small', 'hi'), 10_000, 'the small call');
      assert.deepEqual(small, { status: 200, body: 'h2c says POST /plain/small hi' });
      const big = 'x'.repeat(300 * 1024);
      const large = await within(post('/plain/large', big), 10_000, 'the large call');
      assert.equal(large.status, 200);
      assert.equal(large.body, `h2c says POST /plain/large ${big}`);
      const grpcAnswer = await within(post('/test.Echo/Echo', frame(toJson({ over: 'cleartext' })), { 'content-type': 'application/grpc' }), 10_000, 'the gRPC call');
      assert.equal(grpcAnswer.status, 200);
      assert.deepEqual(fromJson(Buffer.from(grpcAnswer.body, 'latin1').subarray(5)), { echo: { over: 'cleartext' } });
    } finally {
      agent.destroy();
    }
  });

  it("an h2 upstream's answer may carry as many header fields as node:http's (2,000; node:http2's own is 128): past it a 502", async () => {
    const fits = await within(h1Request(port, ca, '/plain/headers/1000', {}, ''), 10_000, 'the 1,000-header answer');
    assert.equal(fits.status, 200);
    assert.equal(fits.headers['x-h999'], 'v');
    const over = await within(h1Request(port, ca, '/plain/headers/2100', {}, ''), 10_000, 'the 2,100-header answer');
    assert.equal(over.status, 502);
    // The session survives a refused answer: the next request is served.
    const next = await within(h1Request(port, ca, '/plain/after', {}, 'x'), 10_000, 'the next call');
    assert.equal(next.status, 200);
  });

  it('over TLS, `HTTP/2.0` offers h2 by ALPN (no `backendTLS.alpn` needed): the gRPC call goes through', async () => {
    // The service under another name, which the route rewrites to the TLS upstream's.
    const tlsClient = echoClient(`localhost:${port}`, grpc.credentials.createSsl(ca), 'tls.Echo');
    try {
      const answer = await within(unary(tlsClient, 'Echo', { over: 'tls' }), 10_000, 'the unary call');
      assert.equal(answer.error, undefined, answer.error?.message);
      assert.deepEqual(answer.value, { echo: { over: 'tls' } });
      assert.deepEqual(answer.trailers?.get('x-trailer'), ['from-upstream']);
    } finally {
      tlsClient.close();
    }
  });
});
