import * as grpc from '@grpc/grpc-js';
import { envoyServices } from '../../plugins/lib/envoy-grpc/envoy-grpc.ts';

/** Handlers of a test Envoy service: return the response object, or throw a `{ code, details }` gRPC error. */
export interface EnvoyHandlers {
  Check?: (request: CheckRequestMessage) => unknown | Promise<unknown>;
  ShouldRateLimit?: (request: RateLimitRequestMessage) => unknown | Promise<unknown>;
}

/** `CheckRequest` as the test server decodes it (keepCase, enums as numbers). */
export interface CheckRequestMessage {
  attributes: {
    source: { address: { socket_address: { address: string; port_value: number } } };
    destination: { address: { socket_address: { address: string; port_value: number } } };
    request: { http: { method: string; headers: Record<string, string>; path: string; host: string; scheme: string; protocol: string; query: string; size: string } };
    context_extensions: Record<string, string>;
  };
}

export interface RateLimitRequestMessage {
  domain: string;
  descriptors: { entries: { key: string; value: string }[] }[];
  hits_addend: number;
}

export interface TestEnvoyServer {
  readonly port: number;
  readonly address: string;
  readonly checks: CheckRequestMessage[];
  readonly rateLimits: RateLimitRequestMessage[];
  stop(): Promise<void>;
}

/** A real grpc-js server on 127.0.0.1 speaking the vendored Envoy ext_authz and RLS protos. */
export async function startEnvoyServer(handlers: EnvoyHandlers): Promise<TestEnvoyServer> {
  const services = envoyServices();
  const checks: CheckRequestMessage[] = [];
  const rateLimits: RateLimitRequestMessage[] = [];
  const server = new grpc.Server();
  const wrap =
    <Req>(record: Req[], fn: ((r: Req) => unknown) | undefined) =>
    (call: grpc.ServerUnaryCall<Req, unknown>, cb: grpc.sendUnaryData<unknown>) => {
      record.push(call.request);
      if (!fn) return cb({ code: grpc.status.UNIMPLEMENTED, details: 'not implemented' });
      Promise.resolve()
        .then(() => fn(call.request))
        .then(
          (res) => cb(null, res),
          (err: { code?: number; details?: string; message?: string }) => cb({ code: err.code ?? grpc.status.INTERNAL, details: err.details ?? err.message ?? 'error' }),
        );
    };
  server.addService(services.Authorization.service, { Check: wrap(checks, handlers.Check) });
  server.addService(services.RateLimitService.service, { ShouldRateLimit: wrap(rateLimits, handlers.ShouldRateLimit) });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );
  return {
    port,
    address: `127.0.0.1:${port}`,
    checks,
    rateLimits,
    stop: () =>
      new Promise<void>((resolve) => {
        server.tryShutdown(() => resolve());
        // Open streams from the gateway's cached channel would hold a graceful shutdown; end them.
        setTimeout(() => server.forceShutdown(), 200).unref();
      }),
  };
}

export { grpc };
