// HTTP/2 in cleartext to an upstream (h2c, prior knowledge; ADR 0151): a backend's `http: { version: HTTP/2.0 }`.
// grpc-js clients over an HTTPS listener (h2) to a grpc-js server without TLS: unary, server streaming, an error
// status as sent, directly and through a Reply; HTTP/1.1 clients through the same routes; one pooled h2 session.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as http2 from 'node:http2';
import * as https from 'node:https';
import { after, before, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import type { RunningGateway } from '../helpers/gateway.ts';
import { httpsBind } from '../helpers/gateway.ts';
import { makeTestPki } from '../helpers/pki.ts';
import type { TestPki } from '../helpers/pki.ts';
import { startGatewayOnFreePorts, within } from './proxy-support.ts';

const toJson = (value: unknown): Buffer => Buffer.from(JSON.stringify(value));
const fromJson = (data: Buffer): unknown => JSON.parse(data.toString()) as unknown;

function method(name: string, responseStream: boolean): grpc.MethodDefinition<unknown, unknown> {
  return {
    path: `/test.Echo/${name}`,
    requestStream: false,
    responseStream,
    requestSerialize: toJson,
    requestDeserialize: fromJson,
    responseSerialize: toJson,
    responseDeserialize: fromJson,
  };
}

const SERVICE = { Echo: method('Echo', false), Count: method('Count', true), Fail: method('Fail', false) } as const;

async function startGrpcServer(): Promise<{ server: grpc.Server; port: number }> {
  const server = new grpc.Server();
  server.addService(SERVICE, {
    Echo: (call: grpc.ServerUnaryCall<unknown, unknown>, cb: grpc.sendUnaryData<unknown>) => {
      const trailer = new grpc.Metadata();
      trailer.set('x-trailer', 'from-upstream');
      cb(null, { echo: call.request }, trailer);
    },
    Count: (call: grpc.ServerWritableStream<{ n: number }, unknown>) => {
      for (let i = 0; i < call.request.n; i++) call.write({ i });
      call.end();
    },
    Fail: (_call: grpc.ServerUnaryCall<unknown, unknown>, cb: grpc.sendUnaryData<unknown>) => {
      cb({ code: grpc.status.NOT_FOUND, details: 'no such thing' });
    },
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );
  return { server, port };
}

/** A plain h2c server: records each request's headers and counts its sessions (connections). */
async function startH2cServer(): Promise<{ server: http2.Http2Server; port: number; seen: http2.IncomingHttpHeaders[]; sessions: () => number }> {
  const seen: http2.IncomingHttpHeaders[] = [];
  let sessions = 0;
  const server = http2.createServer();
  server.on('session', () => sessions++);
  server.on('stream', (stream, headers) => {
    seen.push(headers);
    const chunks: Buffer[] = [];
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('end', () => {
      stream.respond({ ':status': 200, 'content-type': 'text/plain' }, { waitForTrailers: true });
      stream.on('wantTrailers', () => stream.sendTrailers({ 'x-done': 'yes' }));
      stream.end(`h2c says ${headers[':method']} ${headers[':path']} ${Buffer.concat(chunks).toString()}`);
    });
  });
  const port = await new Promise<number>((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port)));
  return { server, port, seen, sessions: () => sessions };
}

type Client = grpc.Client & Record<string, (...args: unknown[]) => unknown>;

function unary(client: Client, name: string, request: unknown): Promise<{ value?: unknown; error?: grpc.ServiceError; trailers?: grpc.Metadata }> {
  return new Promise((resolve) => {
    let trailers: grpc.Metadata | undefined;
    const call = client[name]!(request, (error: grpc.ServiceError | null, value: unknown) => {
      setImmediate(() => resolve(error ? { error } : { value, trailers }));
    }) as grpc.ClientUnaryCall;
    call.on('status', (s: grpc.StatusObject) => (trailers = s.metadata));
  });
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
  let plainUp: Awaited<ReturnType<typeof startH2cServer>>;
  let gw: RunningGateway;
  let port: number;
  let replyPort: number;
  let client: Client;
  let viaReply: Client;

  before(async () => {
    pki = makeTestPki({ serverName: 'localhost', serverAltNames: ['DNS:localhost', 'IP:127.0.0.1'], label: 'upstream-h2c' });
    ca = readFileSync(pki.ca);
    grpcUp = await startGrpcServer();
    plainUp = await startH2cServer();
    const h2c = { http: { version: 'HTTP/2.0' } };
    const bind = (p: number, policies: Record<string, unknown>) =>
      httpsBind(p, { cert: pki.serverCert, key: pki.serverKey }, [
        { name: 'grpc', matches: [{ path: { pathPrefix: '/test.Echo/' } }], policies, backends: [{ host: `127.0.0.1:${grpcUp.port}`, policies: h2c }] },
        // The policy on the route, not the backend: it applies to the route's backends.
        { name: 'plain', matches: [{ path: { pathPrefix: '/plain/' } }], policies: { ...policies, ...h2c }, backends: [{ host: `127.0.0.1:${plainUp.port}` }] },
      ]);
    ({ gw, ports: [port, replyPort] } = await startGatewayOnFreePorts(2, ([p, q]) => ({
      binds: [bind(p!, {}), bind(q!, { timeout: { backendRequestTimeout: '10s' } })],
    })));
    const Constructor = grpc.makeGenericClientConstructor(SERVICE, 'Echo');
    client = new Constructor(`localhost:${port}`, grpc.credentials.createSsl(ca)) as unknown as Client;
    viaReply = new Constructor(`localhost:${replyPort}`, grpc.credentials.createSsl(ca)) as unknown as Client;
  });
  after(async () => {
    client?.close();
    viaReply?.close();
    await gw?.stop();
    grpcUp?.server.forceShutdown();
    plainUp?.server.close();
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

  it('a server-streaming call delivers every message and ends with OK', async () => {
    for (const c of [client, viaReply]) {
      const messages = await within(
        new Promise<unknown[]>((resolve, reject) => {
          const got: unknown[] = [];
          const call = c.Count!({ n: 5 }) as grpc.ClientReadableStream<unknown>;
          call.on('data', (m: unknown) => got.push(m));
          call.on('error', reject);
          call.on('status', (s: grpc.StatusObject) => (s.code === grpc.status.OK ? resolve(got) : reject(new Error(s.details))));
        }),
        10_000,
        'the streaming call',
      );
      assert.deepEqual(messages, [0, 1, 2, 3, 4].map((i) => ({ i })));
    }
  });

  it("an upstream's error status reaches the client as the status the server sent", async () => {
    for (const c of [client, viaReply]) {
      const answer = await within(unary(c, 'Fail', {}), 10_000, 'the failing call');
      assert.equal(answer.error?.code, grpc.status.NOT_FOUND);
      assert.equal(answer.error?.details, 'no such thing');
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
});
