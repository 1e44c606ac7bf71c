// Gateway-made answers to gRPC clients (ADR 0178, BEHAVIOUR.md section 7): no route, an authentication failure, an
// authorization deny, a rate limit, an upstream that refuses the connection or does not answer in time, a direct
// response that is an error. A grpc-js client over TLS h2 and over h2c gets a trailers-only gRPC answer (HTTP 200,
// `grpc-status`, a percent-encoded `grpc-message`) and so the status code and message, not INTERNAL or UNKNOWN made
// up from an HTTP status; the access log carries `grpc.status`. HTTP/1.1 gets the same answer in its head.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as h2connect, createServer as createH2Server } from 'node:http2';
import type { Http2Server } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import type { RunningGateway } from '../helpers/gateway.ts';
import { httpsBind, logRecords } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { makeTestPki } from '../helpers/pki.ts';
import type { TestPki } from '../helpers/pki.ts';
import { echoClient, startEchoServer, unary } from '../helpers/grpc-echo.ts';
import type { EchoClient } from '../helpers/grpc-echo.ts';
import { header, rawRequest, startGatewayOnFreePorts, waitFor, within } from './proxy-support.ts';

/** A route for the gRPC service `<name>.Echo` (its methods' paths start `/<name>.Echo/`). */
function route(name: string, policies: Record<string, unknown>, backend: Record<string, unknown>): Record<string, unknown> {
  return { name, matches: [{ path: { pathPrefix: `/${name}.Echo/` } }], policies, backends: [backend] };
}

describe('gateway-made answers to gRPC clients', () => {
  let pki: TestPki;
  let dir: string;
  let echo: { server: grpc.Server; port: number };
  let silent: Http2Server;
  let gw: RunningGateway;
  let tlsPort: number;
  let plainPort: number;
  const clients: grpc.Client[] = [];
  /** A client of service `<name>.Echo` over TLS h2 (`tls`) or h2c. */
  const client = (name: string, tls: boolean): EchoClient => {
    const c = tls
      ? echoClient(`localhost:${tlsPort}`, grpc.credentials.createSsl(readFileSync(pki.ca)), `${name}.Echo`)
      : echoClient(`127.0.0.1:${plainPort}`, grpc.credentials.createInsecure(), `${name}.Echo`);
    clients.push(c);
    return c;
  };

  before(async () => {
    pki = makeTestPki({ serverName: 'localhost', serverAltNames: ['DNS:localhost', 'IP:127.0.0.1'], label: 'grpc-gateway-errors' });
    echo = await startEchoServer(grpc.ServerCredentials.createInsecure());
    // An upstream that takes every call and never answers (the route's deadline answers instead).
    silent = createH2Server();
    silent.on('stream', () => undefined);
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const closed = await freePort();
    dir = mkdtempSync(join(tmpdir(), 'grpc-errors-'));
    const htpasswd = join(dir, 'users.htpasswd');
    writeFileSync(htpasswd, `ana:{SHA}${createHash('sha1').update('ana-password').digest('base64')}\n`);
    const h2 = (port: number) => ({ host: `127.0.0.1:${port}`, policies: { http: { version: 'HTTP/2.0' } } });
    const routes = [
      route('deny', { authorization: { rules: ['false'] } }, h2(echo.port)),
      route('key', { apiKey: { mode: 'strict', keys: [{ key: 'sk-grpc-test-key-0123456789' }] } }, h2(echo.port)),
      route('basic', { basicAuth: { mode: 'strict', realm: 'grpc-realm', htpasswd: { file: htpasswd } } }, h2(echo.port)),
      route('limit', { localRateLimit: [{ maxTokens: 1, tokensPerFill: 1, fillInterval: '1h' }] }, h2(echo.port)),
      route('down', {}, h2(closed)),
      route('slow', { timeout: { requestTimeout: '300ms' } }, h2((silent.address() as AddressInfo).port)),
      route('teapot', { directResponse: { status: 418, body: 'caf\u00e9 100% short\r\nand stout' } }, h2(echo.port)),
      route('bad', { directResponse: { status: 400, body: 'bad call' } }, h2(echo.port)),
      // 1,024 three-byte characters: 9,216 encoded, past grpc-js's 8 KiB metadata limit unless cut.
      route('wide', { directResponse: { status: 418, body: '\u4e2d'.repeat(1024) } }, h2(echo.port)),
    ];
    ({ gw, ports: [tlsPort, plainPort] } = await startGatewayOnFreePorts(2, ([t, p]) => ({
      config: { logging: { format: 'json' } },
      binds: [httpsBind(t!, { cert: pki.serverCert, key: pki.serverKey }, routes), { port: p, listeners: [{ routes }] }],
    })));
  });
  after(async () => {
    for (const c of clients) c.close();
    await gw?.stop();
    echo?.server.forceShutdown();
    silent?.close();
    pki?.remove();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  for (const tls of [true, false]) {
    const over = tls ? 'TLS h2' : 'h2c';

    it(`${over}: each gateway-made error is the gRPC status its HTTP status maps to, with its message`, async () => {
      const expect = async (name: string, code: grpc.status, details: RegExp): Promise<grpc.Metadata> => {
        const answer = await within(unary(client(name, tls), 'Echo', { hello: name }), 10_000, `the ${name} call`);
        assert.equal(answer.error?.code, code, `${name}: ${answer.error?.code} ${answer.error?.details}`);
        assert.match(answer.error!.details, details, name);
        return answer.error!.metadata;
      };
      await expect('nowhere', grpc.status.UNIMPLEMENTED, /route/);
      await expect('deny', grpc.status.PERMISSION_DENIED, /authoriz/i);
      await expect('key', grpc.status.UNAUTHENTICATED, /key/i);
      // The denial's own headers stay, as metadata: the challenge, the rate limit's numbers.
      assert.deepEqual((await expect('basic', grpc.status.UNAUTHENTICATED, /basic/i)).get('www-authenticate'), ['Basic realm="grpc-realm"']);
      // The one token goes to a call the upstream answers itself (it serves `test.Echo` only: UNIMPLEMENTED).
      assert.match((await unary(client('limit', tls), 'Echo', {})).error!.details, /does not implement/);
      assert.deepEqual((await expect('limit', grpc.status.UNAVAILABLE, /rate limit/i)).get('x-ratelimit-limit'), ['1']);
      await expect('down', grpc.status.UNAVAILABLE, /upstream|connect/i);
      await expect('slow', grpc.status.UNAVAILABLE, /300ms/);
      // A direct response that is an error: its body is the message, percent-encoded on the wire (non-ASCII, `%`,
      // CR LF) and read back as it was.
      await expect('teapot', grpc.status.UNKNOWN, /^caf\u00e9 100% short\r\nand stout$/);
      await expect('bad', grpc.status.INTERNAL, /^bad call$/);
      // A long message is cut (at most 1,024 characters encoded, whole characters): the status still arrives.
      await expect('wide', grpc.status.UNKNOWN, /^\u4e2d{113}$/);
    });
  }

  it('the access log carries grpc.status for a gateway-made answer (HTTP 200, as the client got it)', async () => {
    await waitFor(() => logRecords(gw).some((l) => l.msg === 'request' && l['http.path'] === '/deny.Echo/Echo'), 5000, 'the deny line');
    const lines = logRecords(gw).filter((l) => l.msg === 'request');
    const deny = lines.find((l) => l['http.path'] === '/deny.Echo/Echo')!;
    assert.equal(deny['http.status'], 200);
    assert.equal(deny['grpc.status'], grpc.status.PERMISSION_DENIED);
    const none = lines.find((l) => l['http.path'] === '/nowhere.Echo/Echo')!;
    assert.equal(none['grpc.status'], grpc.status.UNIMPLEMENTED);
  });

  it('a plain HTTP client of the same route still gets the HTTP status and JSON body', async () => {
    const res = await fetch(`http://127.0.0.1:${plainPort}/deny.Echo/Echo`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    assert.equal(res.status, 403);
    assert.match(res.headers.get('content-type') ?? '', /application\/json/);
  });

  it('gRPC over HTTP/1.1 (no trailers): the trailers-only answer in the head; gRPC-Web gets its own content type', async () => {
    for (const type of ['application/grpc', 'application/grpc+proto', 'application/grpc-web+proto']) {
      const res = await rawRequest(plainPort, `POST /deny.Echo/Echo HTTP/1.1\r\nHost: h\r\nContent-Type: ${type}\r\nContent-Length: 5\r\nConnection: close`, Buffer.alloc(5));
      assert.equal(res.status, 200, type);
      assert.deepEqual(header(res, 'content-type'), [type]);
      assert.deepEqual(header(res, 'grpc-status'), [String(grpc.status.PERMISSION_DENIED)]);
      assert.equal(header(res, 'grpc-message').length, 1);
      assert.equal(res.body.length, 0);
    }
    // `application/grpcfoo` is no gRPC content type, and gRPC is POST only: the HTTP answers.
    const other = await rawRequest(plainPort, `POST /deny.Echo/Echo HTTP/1.1\r\nHost: h\r\nContent-Type: application/grpcfoo\r\nContent-Length: 0\r\nConnection: close`);
    assert.equal(other.status, 403);
    const get = await rawRequest(plainPort, `GET /deny.Echo/Echo HTTP/1.1\r\nHost: h\r\nContent-Type: application/grpc\r\nConnection: close`);
    assert.equal(get.status, 403);
  });

  it('a CONNECT with a gRPC content type is still refused 405: a 200 would read as a tunnel opened', async () => {
    const h1 = await rawRequest(plainPort, `CONNECT tunnel.example:443 HTTP/1.1\r\nHost: tunnel.example:443\r\nContent-Type: application/grpc`);
    assert.equal(h1.status, 405);
    assert.deepEqual(header(h1, 'grpc-status'), []);
    const session = h2connect(`http://127.0.0.1:${plainPort}`);
    session.on('error', () => undefined);
    try {
      const status = await within(
        new Promise<unknown>((resolve, reject) => {
          const s = session.request({ ':method': 'CONNECT', ':authority': 'tunnel.example:443', 'content-type': 'application/grpc' });
          s.on('response', (h) => resolve(h[':status']));
          s.on('error', reject);
        }),
        5_000,
        'the h2 CONNECT',
      );
      assert.equal(status, 405);
    } finally {
      session.destroy();
    }
  });
});
