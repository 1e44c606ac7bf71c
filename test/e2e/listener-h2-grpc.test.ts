// gRPC through the gateway (ADR 0141): a grpc-js client speaking h2 to an HTTPS listener, the gateway speaking h2
// (`backendTLS.alpn: [h2]`) to a grpc-js server over TLS. Unary and server-streaming calls, and an upstream error
// status arriving as the status the server sent: gRPC's status travels in response trailers.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
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

/** A JSON-coded service: no .proto needed, the framing and trailers are gRPC's own. */
const SERVICE = { Echo: method('Echo', false), Count: method('Count', true), Fail: method('Fail', false) } as const;

/** What the grpc-js server saw of each call's metadata. */
const seenMetadata: Record<string, unknown>[] = [];

async function startGrpcServer(pki: TestPki): Promise<{ server: grpc.Server; port: number }> {
  const server = new grpc.Server();
  server.addService(SERVICE, {
    Echo: (call: grpc.ServerUnaryCall<unknown, unknown>, cb: grpc.sendUnaryData<unknown>) => {
      seenMetadata.push(call.metadata.getMap());
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
  const credentials = grpc.ServerCredentials.createSsl(null, [{ private_key: readFileSync(pki.serverKey), cert_chain: readFileSync(pki.serverCert) }], false);
  const port = await new Promise<number>((resolve, reject) => server.bindAsync('127.0.0.1:0', credentials, (err, p) => (err ? reject(err) : resolve(p))));
  return { server, port };
}

type Client = grpc.Client & Record<string, (...args: unknown[]) => unknown>;

function unary(client: Client, name: string, request: unknown): Promise<{ value?: unknown; error?: grpc.ServiceError; trailers?: grpc.Metadata }> {
  return new Promise((resolve) => {
    let trailers: grpc.Metadata | undefined;
    const call = client[name]!(request, (error: grpc.ServiceError | null, value: unknown) => {
      // The status (with its trailers) comes after the callback's value: wait for it.
      setImmediate(() => resolve(error ? { error } : { value, trailers }));
    }) as grpc.ClientUnaryCall;
    call.on('status', (s: grpc.StatusObject) => (trailers = s.metadata));
  });
}

describe('gRPC through an HTTPS listener (h2 both sides)', () => {
  let pki: TestPki;
  let upstream: { server: grpc.Server; port: number };
  let gw: RunningGateway;
  let port: number;
  let client: Client;
  /** The same service through a route with a per-attempt deadline: answers through a Reply (`forward`). */
  let viaReply: Client;

  before(async () => {
    pki = makeTestPki({ serverName: 'localhost', serverAltNames: ['DNS:localhost', 'IP:127.0.0.1'], label: 'listener-h2-grpc' });
    upstream = await startGrpcServer(pki);
    const bind = (p: number, policies: Record<string, unknown>) =>
      httpsBind(p, { cert: pki.serverCert, key: pki.serverKey }, [
        {
          name: 'grpc',
          matches: [{ path: { pathPrefix: '/test.Echo/' } }],
          policies,
          backends: [{ host: `127.0.0.1:${upstream.port}`, policies: { backendTLS: { root: pki.ca, alpn: ['h2'] } } }],
        },
      ]);
    let replyPort: number;
    ({ gw, ports: [port, replyPort] } = await startGatewayOnFreePorts(2, ([p, q]) => ({
      binds: [bind(p!, {}), bind(q!, { timeout: { backendRequestTimeout: '10s' } })],
    })));
    const Constructor = grpc.makeGenericClientConstructor(SERVICE, 'Echo');
    client = new Constructor(`localhost:${port}`, grpc.credentials.createSsl(readFileSync(pki.ca))) as unknown as Client;
    viaReply = new Constructor(`localhost:${replyPort!}`, grpc.credentials.createSsl(readFileSync(pki.ca))) as unknown as Client;
  });
  after(async () => {
    client?.close();
    viaReply?.close();
    await gw?.stop();
    upstream?.server.forceShutdown();
    pki?.remove();
  });

  it('a unary call: the answer, the metadata sent, the trailers received', async () => {
    const md = new grpc.Metadata();
    md.set('x-md', 'client-value');
    const answer = await within(
      new Promise<{ value?: unknown; error?: grpc.ServiceError; trailers?: grpc.Metadata }>((resolve) => {
        let trailers: grpc.Metadata | undefined;
        const call = client.Echo!({ hello: 'world' }, md, (error: grpc.ServiceError | null, value: unknown) => setImmediate(() => resolve(error ? { error } : { value, trailers }))) as grpc.ClientUnaryCall;
        call.on('status', (s: grpc.StatusObject) => (trailers = s.metadata));
      }),
      10_000,
      'the unary call',
    );
    assert.equal(answer.error, undefined, answer.error?.message);
    assert.deepEqual(answer.value, { echo: { hello: 'world' } });
    assert.deepEqual(answer.trailers?.get('x-trailer'), ['from-upstream']);
    const seen = seenMetadata.at(-1)!;
    assert.equal(seen['x-md'], 'client-value');
  });

  it('a server-streaming call delivers every message and ends with OK', async () => {
    const messages = await within(
      new Promise<unknown[]>((resolve, reject) => {
        const got: unknown[] = [];
        const call = client.Count!({ n: 5 }) as grpc.ClientReadableStream<unknown>;
        call.on('data', (m: unknown) => got.push(m));
        call.on('error', reject);
        call.on('status', (s: grpc.StatusObject) => (s.code === grpc.status.OK ? resolve(got) : reject(new Error(s.details))));
      }),
      10_000,
      'the streaming call',
    );
    assert.deepEqual(messages, [0, 1, 2, 3, 4].map((i) => ({ i })));
  });

  it("an upstream's error status reaches the client as the status the server sent", async () => {
    for (const c of [client, viaReply]) {
      const answer = await within(unary(c, 'Fail', {}), 10_000, 'the failing call');
      assert.equal(answer.error?.code, grpc.status.NOT_FOUND);
      assert.equal(answer.error?.details, 'no such thing');
    }
  });

  it('through a Reply (a per-attempt deadline on the route): the answer and its trailers', async () => {
    const answer = await within(unary(viaReply, 'Echo', { via: 'reply' }), 10_000, 'the unary call');
    assert.equal(answer.error, undefined, answer.error?.message);
    assert.deepEqual(answer.value, { echo: { via: 'reply' } });
    assert.deepEqual(answer.trailers?.get('x-trailer'), ['from-upstream']);
  });
});
