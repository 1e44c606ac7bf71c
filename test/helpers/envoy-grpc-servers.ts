import { readFileSync } from 'node:fs';
import * as grpc from '@grpc/grpc-js';
import { envoyServices } from '../../plugins/lib/envoy-grpc/envoy-grpc.ts';
import { makeTestPki as makePki } from './pki.ts';
import type { TestPki } from './pki.ts';

export type { TestPki };

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

/** What the server saw of one call besides the request message. */
export interface CallInfo {
  readonly method: 'Check' | 'ShouldRateLimit';
  /** Call metadata (text values; repeated keys joined with `, `). */
  readonly metadata: Record<string, string>;
  /** CN of the client certificate presented (mutual TLS), if any. */
  readonly clientCN: string | undefined;
}

export interface TestEnvoyServer {
  readonly port: number;
  readonly address: string;
  readonly checks: CheckRequestMessage[];
  readonly rateLimits: RateLimitRequestMessage[];
  /** One entry per call of either method, in order. */
  readonly calls: CallInfo[];
  stop(): Promise<void>;
}

/** TLS for the test server: PEM file paths. With `clientCa`, a client certificate signed by it is required. */
export interface TestServerTls {
  readonly cert: string;
  readonly key: string;
  readonly clientCa?: string;
}

/**
 * A real grpc-js server speaking the vendored Envoy ext_authz and RLS protos, on 127.0.0.1 (or `host`), plaintext
 * or TLS.
 */
export async function startEnvoyServer(handlers: EnvoyHandlers, options: { tls?: TestServerTls; host?: string } = {}): Promise<TestEnvoyServer> {
  const services = envoyServices();
  const checks: CheckRequestMessage[] = [];
  const rateLimits: RateLimitRequestMessage[] = [];
  const calls: CallInfo[] = [];
  const server = new grpc.Server();
  const wrap =
    <Req>(method: CallInfo['method'], record: Req[], fn: ((r: Req) => unknown) | undefined) =>
    (call: grpc.ServerUnaryCall<Req, unknown>, cb: grpc.sendUnaryData<unknown>) => {
      record.push(call.request);
      const metadata: Record<string, string> = {};
      for (const [key, value] of Object.entries(call.metadata.toJSON())) metadata[key] = value.map((v) => v.toString()).join(', ');
      const auth = call.getAuthContext();
      const peer = auth.sslPeerCertificate;
      calls.push({
        method,
        metadata,
        clientCN: peer && Object.keys(peer).length ? (peer.subject?.CN as string | undefined) : undefined,
      });
      if (!fn) return cb({ code: grpc.status.UNIMPLEMENTED, details: 'not implemented' });
      Promise.resolve()
        .then(() => fn(call.request))
        .then(
          (res) => cb(null, res),
          (err: { code?: number; details?: string; message?: string }) => cb({ code: err.code ?? grpc.status.INTERNAL, details: err.details ?? err.message ?? 'error' }),
        );
    };
  server.addService(services.Authorization.service, { Check: wrap('Check', checks, handlers.Check) });
  server.addService(services.RateLimitService.service, { ShouldRateLimit: wrap('ShouldRateLimit', rateLimits, handlers.ShouldRateLimit) });
  const tls = options.tls;
  const credentials = tls
    ? grpc.ServerCredentials.createSsl(
        tls.clientCa ? readFileSync(tls.clientCa) : null,
        [{ private_key: readFileSync(tls.key), cert_chain: readFileSync(tls.cert) }],
        tls.clientCa !== undefined,
      )
    : grpc.ServerCredentials.createInsecure();
  const host = options.host ?? '127.0.0.1';
  const port = await new Promise<number>((resolve, reject) => server.bindAsync(`${host}:0`, credentials, (err, p) => (err ? reject(err) : resolve(p))));
  return {
    port,
    address: `${host}:${port}`,
    checks,
    rateLimits,
    calls,
    stop: () =>
      new Promise<void>((resolve) => {
        server.tryShutdown(() => resolve());
        // Open streams from the gateway's cached channel would hold a graceful shutdown; end them.
        setTimeout(() => server.forceShutdown(), 200).unref();
      }),
  };
}

/** A throwaway PKI made with openssl: a CA, a server certificate and a client certificate signed by it, and an unrelated CA. */
/** The PKI of the gRPC TLS tests: the server answers as `localhost`, `rls.test` and 127.0.0.1. */
export function makeTestPki(): TestPki {
  return makePki({ serverName: 'rls.test', serverAltNames: ['DNS:localhost', 'DNS:rls.test', 'IP:127.0.0.1'], label: 'envoy-grpc-tls' });
}

export { grpc };
