import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { certHasAltName } from 'switchyard/sdk';
import type { PluginSpans, ResourceCache, UpstreamTls } from 'switchyard/sdk';
import { sendableHeaderValue } from '../header-modifier/header-modifier.ts';
import type { ServiceTarget } from './service-target.ts';

/**
 * gRPC clients for Envoy's external services (ext_authz, rate limit), from the protos vendored in
 * plugins/lib/envoy-protos/. The protos are loaded once per process, on first use; clients are cached per address,
 * TLS settings and call metadata in the gateway's resource cache, so a reload that keeps them keeps the connection.
 * The address forms (`host` / `service` / `backend` + `policies`) are resolved in service-target.ts.
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

export { resolveServiceTarget, SUPPORTED_CONNECTION_POLICIES } from './service-target.ts';
export type { ServiceTarget, ServiceTargetConfig } from './service-target.ts';

// Reconnect quickly after the service comes back: grpc-js otherwise backs off up to two minutes, failing every call
// (fast) in the meantime.
const CHANNEL_OPTIONS: grpc.ChannelOptions = {
  'grpc.initial_reconnect_backoff_ms': 200,
  'grpc.max_reconnect_backoff_ms': 2000,
  'grpc.keepalive_time_ms': 60_000,
};

/** A client of one Envoy service plus the metadata sent on every call (`policies.requestHeaderModifier`). */
export interface EnvoyClient {
  readonly client: grpc.Client;
  /** Cloned per call. */
  readonly metadata: grpc.Metadata;
  /** Set by `tracedClient` when the gateway traces: each call is then a CLIENT span. */
  readonly trace?: GrpcTrace;
}

/** What a call's span says about the service (OpenTelemetry RPC conventions). */
export interface GrpcTrace {
  readonly spans: PluginSpans;
  /** Fully qualified service: `envoy.service.auth.v3.Authorization`. */
  readonly service: string;
  readonly host: string;
  readonly port: number | undefined;
}

const FULL_NAMES = { Authorization: 'envoy.service.auth.v3.Authorization', RateLimitService: 'envoy.service.ratelimit.v3.RateLimitService' } as const;

/**
 * The policy's view of a (shared, cached) client: with tracing on, every call it makes is a CLIENT span child of
 * the request's span, and the span's `traceparent` goes to the service as call metadata. (Tracing starts after the
 * first load, so whether it is on is asked per call: `spans.start` returns undefined when off.)
 */
export function tracedClient(client: EnvoyClient, spans: PluginSpans | undefined, service: 'Authorization' | 'RateLimitService', target: ServiceTarget): EnvoyClient {
  if (!spans) return client;
  const m = /^(?:\[([^\]]+)\]|([^:]+)):(\d+)$/.exec(target.target);
  const host = m ? (m[1] ?? m[2]!) : target.target;
  return { client: client.client, metadata: client.metadata, trace: { spans, service: FULL_NAMES[service], host, port: m ? Number(m[3]) : undefined } };
}

/**
 * gRPC channel credentials and options for a target: plaintext, or TLS with `backendTLS`'s CA, client certificate,
 * verification name (`hostname`, sent as SNI and checked, through `grpc.ssl_target_name_override`), `insecure`,
 * `insecureHost` and `subjectAltNames`, with the semantics they have on a backend.
 */
export function channelCredentials(target: ServiceTarget): { credentials: grpc.ChannelCredentials; options: grpc.ChannelOptions } {
  if (!target.secure) return { credentials: grpc.credentials.createInsecure(), options: CHANNEL_OPTIONS };
  const tls: UpstreamTls = target.tls ?? {};
  const verify: grpc.VerifyOptions = {};
  if (tls.insecure) {
    verify.rejectUnauthorized = false;
    verify.checkServerIdentity = () => undefined;
  } else if (tls.subjectAltNames?.length) {
    const accepted = tls.subjectAltNames;
    verify.checkServerIdentity = (_name, cert) =>
      certHasAltName(cert, accepted)
        ? undefined
        : Object.assign(new Error(`certificate subject alternative names (${cert.subjectaltname ?? 'none'}) match none of: ${accepted.join(', ')}`), {
            code: 'ERR_TLS_CERT_ALTNAME_INVALID',
            reason: 'subjectAltNames mismatch',
            host: _name,
            cert,
          });
  } else if (tls.insecureHost) {
    verify.checkServerIdentity = () => undefined;
  }
  const credentials = grpc.credentials.createSsl(
    tls.ca ? Buffer.from(tls.ca) : null,
    tls.key ? Buffer.from(tls.key) : null,
    tls.cert ? Buffer.from(tls.cert) : null,
    verify,
  );
  const options: grpc.ChannelOptions = tls.servername ? { ...CHANNEL_OPTIONS, 'grpc.ssl_target_name_override': tls.servername } : CHANNEL_OPTIONS;
  return { credentials, options };
}

/** The call metadata of a target: `requestHeaderModifier`'s `add` (appended) then `set` (replacing); `remove` has nothing to act on. */
export function callMetadata(target: ServiceTarget): grpc.Metadata {
  const md = new grpc.Metadata();
  if (target.headers) {
    for (const [name, value] of target.headers.add) md.add(name, value);
    for (const [name, value] of target.headers.set) md.set(name, value);
  }
  return md;
}

const hash = (value: unknown): string => createHash('sha256').update(JSON.stringify(value ?? null)).digest('hex').slice(0, 32);

/**
 * A client of `service` at `target`, shared by every policy (and reload) with the same address, TLS settings and
 * call metadata; a reload that changes any of them gets a new client, and the old one is closed once unused.
 */
export function cachedClient(resources: ResourceCache, service: 'Authorization' | 'RateLimitService', target: ServiceTarget): EnvoyClient {
  const tls = target.secure ? (target.tls ?? {}) : undefined;
  const headers = target.headers ? { add: target.headers.add, set: target.headers.set } : undefined;
  return resources.get(
    `envoy-grpc:${service}:${target.secure ? 'tls' : 'plain'}:${target.target}:${hash(tls)}:${hash(headers)}`,
    () => {
      const Ctor = envoyServices()[service];
      const { credentials, options } = channelCredentials(target);
      return { client: new Ctor(target.target, credentials, options), metadata: callMetadata(target) };
    },
    (c) => c.client.close(),
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
export function unaryCall<Res>(service: EnvoyClient, method: string, request: unknown, timeoutMs: number, signal?: AbortSignal): Promise<Res> {
  return new Promise<Res>((resolve, reject) => {
    const client = service.client;
    const fn = (client as unknown as Record<string, UnaryMethod>)[method]!;
    let onAbort: (() => void) | undefined;
    const metadata = service.metadata.clone();
    const t = service.trace;
    const span = t?.spans.start(`${t.service}/${method}`, 'client', {
      // OTel's stable RPC conventions (ADR 0171), and beside them the older names (ADR 0046) for existing queries.
      'rpc.system.name': 'grpc',
      'rpc.method': `${t.service}/${method}`,
      'rpc.system': 'grpc',
      'rpc.service': t.service,
      'server.address': t.host,
      'server.port': t.port,
    });
    if (span) {
      const carrier: Record<string, unknown> = {};
      span.inject(carrier);
      for (const k in carrier) metadata.set(k, String(carrier[k]));
    }
    const call = fn.call(client, request, metadata, { deadline: Date.now() + timeoutMs }, (err, response) => {
      if (onAbort) signal!.removeEventListener('abort', onAbort);
      if (span) {
        // The status name (`UNAVAILABLE`, `DEADLINE_EXCEEDED`), as the RPC conventions name it; also error.type.
        const status = err ? (grpc.status[err.code] ?? String(err.code)) : 'OK';
        span.setAttributes({ 'rpc.status_code': status, 'rpc.grpc.status_code': err ? err.code : 0 });
        span.end(err ? status : undefined);
      }
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

/** Headers a service (ext_authz, a rate limit service) may not set or remove: the gateway owns framing and routing. */
const GATEWAY_OWNED = new Set(['host', 'content-length', 'transfer-encoding', 'connection']);

/** Whether a service's header edit of `name` (lower-case) is refused: a pseudo-header or one the gateway owns. */
export function gatewayOwnedHeader(name: string): boolean {
  return name.startsWith(':') || GATEWAY_OWNED.has(name);
}

/** An HTTP field name (RFC 9110 token), lower-case. */
const FIELD_NAME = /^[!#$%&'*+\-.^_`|~0-9a-z]+$/;

/**
 * A header a service (ext_authz, a rate limit service) asked for as `[name, value]` (name lower-case), or undefined
 * when it is one the gateway owns (framing, routing, pseudo-headers), its name is not a token, or its value cannot be
 * sent (CR, LF: node:http refused the whole answer, a 500; undici the request, a 502 blamed on the upstream).
 */
export function serviceHeader(h: HeaderValueMessage): [string, string] | undefined {
  const name = h.key.toLowerCase();
  if (gatewayOwnedHeader(name) || !FIELD_NAME.test(name)) return undefined;
  const value = sendableHeaderValue(headerText(h));
  return value === undefined ? undefined : [name, value];
}
