// A JSON-coded gRPC echo service for tests of gRPC through the gateway (ADR 0141, 0151): no .proto needed, the
// framing and trailers are gRPC's own. grpc-js server and client helpers.
import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';

export const toJson = (value: unknown): Buffer => Buffer.from(JSON.stringify(value));
export const fromJson = (data: Buffer): unknown => JSON.parse(data.toString()) as unknown;

function method(name: string, responseStream: boolean, service: string, requestStream = false): grpc.MethodDefinition<unknown, unknown> {
  return {
    path: `/${service}/${name}`,
    requestStream,
    responseStream,
    requestSerialize: toJson,
    requestDeserialize: fromJson,
    responseSerialize: toJson,
    responseDeserialize: fromJson,
  };
}

/**
 * `Echo` (unary, with an `x-trailer` trailer), `Count` (server streaming `{i}` n times), `Fail` (NOT_FOUND), `Chat`
 * (bidirectional: each message echoed as it arrives).
 */
export function echoService(service = 'test.Echo') {
  return {
    Echo: method('Echo', false, service),
    Count: method('Count', true, service),
    Fail: method('Fail', false, service),
    Chat: method('Chat', true, service, true),
  } as const;
}

/** A grpc-js server of the echo service on 127.0.0.1; `seen` gets each Echo call's metadata. */
export async function startEchoServer(credentials: grpc.ServerCredentials, seen?: Record<string, unknown>[]): Promise<{ server: grpc.Server; port: number }> {
  const server = new grpc.Server();
  server.addService(echoService(), {
    Echo: (call: grpc.ServerUnaryCall<unknown, unknown>, cb: grpc.sendUnaryData<unknown>) => {
      seen?.push(call.metadata.getMap());
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
    Chat: (call: grpc.ServerDuplexStream<unknown, unknown>) => {
      call.on('data', (m: unknown) => call.write({ heard: m }));
      call.on('end', () => call.end());
    },
  });
  const port = await new Promise<number>((resolve, reject) => server.bindAsync('127.0.0.1:0', credentials, (err, p) => (err ? reject(err) : resolve(p))));
  return { server, port };
}

export type EchoClient = grpc.Client & Record<string, (...args: unknown[]) => unknown>;

/** A generic client of the echo service (`service` as the server was given it) at `address`. */
export function echoClient(address: string, credentials: grpc.ChannelCredentials, service = 'test.Echo'): EchoClient {
  const Constructor = grpc.makeGenericClientConstructor(echoService(service), 'Echo');
  return new Constructor(address, credentials) as unknown as EchoClient;
}

export interface UnaryAnswer {
  value?: unknown;
  error?: grpc.ServiceError;
  trailers?: grpc.Metadata;
}

/** A unary call: its value and trailers, or its error. */
export function unary(client: EchoClient, name: string, request: unknown, metadata = new grpc.Metadata()): Promise<UnaryAnswer> {
  return new Promise((resolve) => {
    let trailers: grpc.Metadata | undefined;
    const call = client[name]!(request, metadata, (error: grpc.ServiceError | null, value: unknown) => {
      // The status (with its trailers) comes after the callback's value: wait for it.
      setImmediate(() => resolve(error ? { error } : { value, trailers }));
    }) as grpc.ClientUnaryCall;
    call.on('status', (s: grpc.StatusObject) => (trailers = s.metadata));
  });
}

/** `Count` with `n`: every message, once the status is OK. */
export function countStream(client: EchoClient, n: number): Promise<unknown[]> {
  return new Promise<unknown[]>((resolve, reject) => {
    const got: unknown[] = [];
    const call = client.Count!({ n }) as grpc.ClientReadableStream<unknown>;
    call.on('data', (m: unknown) => got.push(m));
    call.on('error', reject);
    call.on('status', (s: grpc.StatusObject) => (s.code === grpc.status.OK ? resolve(got) : reject(new Error(s.details))));
  });
}

/** Each client's `Count` of 5 delivers every message, and its `Fail` ends with the status the server sent. */
export async function assertStreamsAndStatuses(clients: readonly EchoClient[], within: <T>(p: Promise<T>, ms: number, what: string) => Promise<T>): Promise<void> {
  for (const c of clients) {
    assert.deepEqual(await within(countStream(c, 5), 10_000, 'the streaming call'), [0, 1, 2, 3, 4].map((i) => ({ i })));
    const answer = await within(unary(c, 'Fail', {}), 10_000, 'the failing call');
    assert.equal(answer.error?.code, grpc.status.NOT_FOUND);
    assert.equal(answer.error?.details, 'no such thing');
  }
}

/**
 * A bidirectional `Chat`: each of `messages` is sent only once the previous one's echo came back, so a gateway that
 * held the request body until its end (or the answer until the request ended) never finishes.
 */
export function chatInTurns(client: EchoClient, messages: readonly unknown[]): Promise<unknown[]> {
  return new Promise<unknown[]>((resolve, reject) => {
    const heard: unknown[] = [];
    const call = client.Chat!() as grpc.ClientDuplexStream<unknown, unknown>;
    call.on('data', (m: unknown) => {
      heard.push(m);
      if (heard.length < messages.length) call.write(messages[heard.length]);
      else call.end();
    });
    call.on('error', reject);
    call.on('status', (s: grpc.StatusObject) => (s.code === grpc.status.OK ? resolve(heard) : reject(new Error(s.details))));
    call.write(messages[0]);
  });
}
