import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import type { CompileContext, ResourceCache } from 'switchyard/sdk';

/**
 * gRPC clients for Envoy's external services (ext_authz, rate limit), from the protos vendored in
 * plugins/lib/envoy-protos/. The protos are loaded once per process, on first use; clients are cached per address
 * in the gateway's resource cache, so a reload that keeps the address keeps the connection.
 */

const PROTO_DIR = fileURLToPath(new URL('../envoy-protos/', import.meta.url));

/** Loader options: field names as in the protos, enums as numbers, 64-bit ints as strings, defaults filled in. */
export const LOADER_OPTIONS: protoLoader.Options = { keepCase: true, longs: String, enums: Number, defaults: true, oneofs: true, includeDirs: [PROTO_DIR] };

export const AUTHZ_PROTO = 'envoy/service/auth/v3/external_auth.proto';
export const RLS_PROTO = 'envoy/service/ratelimit/v3/rls.proto';

/** Service constructors (clients) and definitions (for servers, in tests). */
export interface EnvoyServices {
  readonly Authorization: grpc.ServiceClientConstructor;
  readonly RateLimitService: grpc.ServiceClientConstructor;
}

let services: EnvoyServices | undefined;

/** Load the vendored protos (once per process). */
export function envoyServices(): EnvoyServices {
  if (services) return services;
  const defs = protoLoader.loadSync([AUTHZ_PROTO, RLS_PROTO], LOADER_OPTIONS);
  const root = grpc.loadPackageDefinition(defs) as unknown as {
    envoy: { service: { auth: { v3: { Authorization: grpc.ServiceClientConstructor } }; ratelimit: { v3: { RateLimitService: grpc.ServiceClientConstructor } } } };
  };
  services = { Authorization: root.envoy.service.auth.v3.Authorization, RateLimitService: root.envoy.service.ratelimit.v3.RateLimitService };
  return services;
}

export { grpc };

/** Where a gRPC service lives. */
export interface GrpcAddress {
  /** `host:port` as gRPC dials it. */
  readonly target: string;
  readonly secure: boolean;
}

/**
 * Parse `host:port`, `[v6]:port` or `http(s)://host:port` (the scheme picks plaintext or TLS). Returns an error
 * message when the value is not an address.
 */
export function parseGrpcAddress(value: string): GrpcAddress | string {
  let rest = value.trim();
  let secure = false;
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(rest);
  if (scheme) {
    const s = scheme[1]!.toLowerCase();
    if (s !== 'http' && s !== 'https') return `unsupported scheme \`${s}\` (use http or https, or no scheme)`;
    secure = s === 'https';
    rest = rest.slice(scheme[0].length).replace(/\/$/, '');
  }
  const m = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9._-]+):(\d{1,5})$/.exec(rest);
  if (!m) return `\`${value}\` is not a \`host:port\` address`;
  const port = Number(m[2]);
  if (port < 1 || port > 65535) return `port ${m[2]} is out of range`;
  return { target: `${m[1]}:${port}`, secure };
}

/** The address of a `host` or named `backend` service reference, or a config error at the right field. */
export async function resolveServiceAddress(config: { host?: string; backend?: string }, ctx: CompileContext): Promise<GrpcAddress> {
  if (config.host !== undefined) {
    const parsed = parseGrpcAddress(config.host);
    if (typeof parsed === 'string') return ctx.fail(parsed, ['host']);
    return parsed;
  }
  const backend = await ctx.namedBackend(config.backend!, ['backend']);
  const origin = backend.target?.origin;
  if (!origin) return ctx.fail(`backend \`${config.backend}\` does not forward to one \`host\`; use a host backend`, ['backend']);
  const parsed = parseGrpcAddress(origin);
  if (typeof parsed === 'string') return ctx.fail(parsed, ['backend']);
  return parsed;
}

// Reconnect quickly after the service comes back: grpc-js otherwise backs off up to two minutes, failing every call
// (fast) in the meantime.
const CHANNEL_OPTIONS: grpc.ChannelOptions = {
  'grpc.initial_reconnect_backoff_ms': 200,
  'grpc.max_reconnect_backoff_ms': 2000,
  'grpc.keepalive_time_ms': 60_000,
};

/** A client of `service` at `address`, shared by every policy (and reload) that uses the same address. */
export function cachedClient(resources: ResourceCache, service: 'Authorization' | 'RateLimitService', address: GrpcAddress): grpc.Client {
  return resources.get(
    `envoy-grpc:${service}:${address.secure ? 'tls' : 'plain'}:${address.target}`,
    () => {
      const Ctor = envoyServices()[service];
      const creds = address.secure ? grpc.credentials.createSsl() : grpc.credentials.createInsecure();
      return new Ctor(address.target, creds, CHANNEL_OPTIONS);
    },
    (client) => client.close(),
  );
}

/** A failed call: the service could not be reached, answered with a gRPC error, or did not answer in time. */
export class GrpcCallError extends Error {
  readonly grpcCode: number | undefined;
  constructor(message: string, grpcCode: number | undefined) {
    super(message);
    this.name = 'GrpcCallError';
    this.grpcCode = grpcCode;
  }
}

type UnaryMethod = (request: unknown, metadata: grpc.Metadata, options: grpc.CallOptions, callback: (err: grpc.ServiceError | null, response?: unknown) => void) => grpc.ClientUnaryCall;

/** One unary call with a deadline, cancelled when `signal` aborts (the client went away). */
export function unaryCall<Res>(client: grpc.Client, method: string, request: unknown, timeoutMs: number, signal?: AbortSignal): Promise<Res> {
  return new Promise<Res>((resolve, reject) => {
    const fn = (client as unknown as Record<string, UnaryMethod>)[method]!;
    let onAbort: (() => void) | undefined;
    const call = fn.call(client, request, new grpc.Metadata(), { deadline: Date.now() + timeoutMs }, (err, response) => {
      if (onAbort) signal!.removeEventListener('abort', onAbort);
      if (err) reject(new GrpcCallError(`${method}: ${err.details || err.message}`, err.code));
      else resolve(response as Res);
    });
    if (signal) {
      if (signal.aborted) call.cancel();
      else {
        onAbort = () => call.cancel();
        signal.addEventListener('abort', onAbort, { once: true });
      }
    }
  });
}

/** Envoy `HeaderValueOption` / `HeaderValue` as decoded by the loader. */
export interface HeaderValueMessage {
  key: string;
  value: string;
  raw_value?: Buffer | Uint8Array;
}
export interface HeaderValueOptionMessage {
  header: HeaderValueMessage | null;
  append: { value: boolean } | null;
  append_action: number;
}

/** The text of a `HeaderValue` (`raw_value` wins when set, as in Envoy). */
export function headerText(h: HeaderValueMessage): string {
  return h.raw_value && h.raw_value.length > 0 ? Buffer.from(h.raw_value).toString('latin1') : h.value;
}
