/**
 * `ctx.connect`: a connection of a plugin's own to an upstream service (ADR 0030): an address in the one schema
 * (`host` | `service` | `backend`), read by `parseUpstreamAddress`, plus the connection's own `policies` (a
 * `backendPolicies` map: `backendTLS`, `backendAuth`, ...) compiled and checked at load. The guards, `extAuthz`,
 * `remoteRateLimit`, JWKS and OIDC metadata fetchers, the guardrail webhook and MCP HTTP targets all connect so.
 */
import type { Exchange } from './exchange.ts';
import type { CompileContext, ConfigPath } from './compile-context.ts';
import type { PolicySet } from './policy-instance.ts';
import type { BackendInstance } from './backend-instance.ts';
import { parseUpstreamAddress, serviceAuthority } from './upstream-address.ts';
import type { AddressRules, ServiceRef, UpstreamAddress } from './upstream-address.ts';
import type { UpstreamCallOptions, UpstreamResponse, UpstreamTarget, UpstreamTls } from './upstream.ts';

/** The address fields as written in a config (exactly one of `host`, `service`, `backend`; see `UPSTREAM_ADDRESS_SCHEMA`). */
export interface UpstreamAddressConfig {
  readonly host?: string;
  readonly service?: ServiceRef;
  readonly backend?: string;
  /** The connection's own policies, a `backendPolicies` map. */
  readonly policies?: Record<string, unknown>;
}

/**
 * What `ctx.connect` takes: the address as written, and how this plugin reads it (the `AddressRules` of
 * `parseUpstreamAddress`: a separate `port` or `path` field, whether a path is taken, whether a port is required).
 */
export interface ConnectOptions extends UpstreamAddressConfig, Omit<AddressRules, 'tls' | 'pathHint'> {
  /** What the upstream is, for messages: `the rate limit service`, `Model Armor`. */
  readonly what: string;
  /** Where the address fields sit below the plugin's value (`['target']`), for error positions. Default `[]`. */
  readonly at?: ConfigPath;
  /** The name of the field holding `host` in this plugin's config (`url`, `issuer`), for error positions. */
  readonly hostField?: string;
  /** The policy keys that mean something on this connection; any other under `policies` is a config error. */
  readonly allow: readonly string[];
  /** Policies used when `policies` does not set their key (a guard's default `backendAuth`). */
  readonly defaults?: Record<string, unknown>;
  /** A compiled set the connection's policies layer over (an MCP target's policies). */
  readonly inherit?: PolicySet;
  /** `UpstreamTargetOptions.authority` of the pool (the kernel's default when absent). */
  readonly authority?: 'target' | 'request';
}

/** A compiled connection. */
export interface Connection {
  /** `http(s)://host:port`. */
  readonly origin: string;
  readonly secure: boolean;
  /** `host:port` as dialled (what a gRPC client is given). */
  readonly authority: string;
  /** The endpoint path (with `paths: 'allow'`), `/` otherwise. */
  readonly path: string;
  /** Whether the config wrote a path. */
  readonly pathGiven: boolean;
  /** `backendTLS` of the connection; undefined when not set. */
  readonly tls: UpstreamTls | undefined;
  /** The connection's compiled policies (layered over `inherit` and `defaults`). */
  readonly policies: PolicySet;
  /** The named backend, for the `backend` form. */
  readonly backend: BackendInstance | undefined;
  /** The pool: the named backend's own, or one for `origin` with `tls` (made on first use). */
  readonly target: UpstreamTarget;
  /**
   * Send a request on behalf of `ex` (its signal unless `options.signal` is set) with the connection's per-attempt
   * hooks (`backendAuth`), through `target`.
   */
  request(options: UpstreamCallOptions, ex?: Exchange): Promise<UpstreamResponse>;
}

/**
 * The JSON Schema of a `service` reference; plugin schemas use it as `{"$ref": "switchyard:defs#/$defs/serviceRef"}`.
 */
export const SERVICE_REF_SCHEMA = Object.freeze({
  type: 'object',
  description: 'A Kubernetes-style service reference. Without a control plane it resolves by DNS: the gateway dials `<hostname>:<port>` (plaintext, or TLS when `backendTLS` applies).',
  properties: {
    name: {
      type: ['object', 'string'],
      description: 'The service: `{namespace, hostname}`, or the string `<namespace>/<hostname>` (exactly one `/`). The hostname is the service\'s DNS name, such as `ratelimit.default.svc.cluster.local`.',
      properties: {
        namespace: { type: 'string', description: "The service's namespace." },
        hostname: { type: 'string', description: "The service's DNS name (fully qualified), dialled with `port`." },
      },
      required: ['namespace', 'hostname'],
      additionalProperties: false,
    },
    port: { type: 'integer', minimum: 1, maximum: 65535, description: "The service's port." },
  },
  required: ['name', 'port'],
  additionalProperties: false,
});

/**
 * The JSON Schema of the address fields, for a plugin's `schema.json`-equivalent (`allOf` it in, or copy its
 * `properties`): exactly one of `host`, `service`, `backend`, and `policies`.
 */
export const UPSTREAM_ADDRESS_SCHEMA = Object.freeze({
  type: 'object',
  properties: {
    host: { type: 'string', description: '`name`, `name:port`, `[v6]:port` or `http(s)://name[:port]`; without a scheme, TLS only when `policies.backendTLS` is set.' },
    service: SERVICE_REF_SCHEMA,
    backend: { type: 'string', description: 'The name of a top-level backend that forwards to one host.' },
    policies: { type: 'object', description: 'Policies of the connection (a `backendPolicies` map).' },
  },
  oneOf: [{ required: ['host'] }, { required: ['service'] }, { required: ['backend'] }],
});

/**
 * Compile a connection (see {@link ConnectOptions}); the kernel exposes it as `ctx.connect`. Fails the load at
 * the field that is wrong. Everything here runs once per config load.
 */
export async function connectUpstream(ctx: CompileContext, options: ConnectOptions): Promise<Connection> {
  const at = options.at ?? [];
  const sub = (...rest: (string | number)[]): ConfigPath => [...at, ...rest];
  const written = Object.keys(options.policies ?? {});
  let policies = await ctx.compilePolicies('backendPolicies', options.policies, sub('policies'));
  // The kernel renamed aliases to their keys in place, in the same order.
  Object.keys(options.policies ?? {}).forEach((key, i) => {
    if (!options.allow.includes(key)) {
      const allowed = options.allow.map((k) => `\`${k}\``);
      const list = allowed.length > 1 ? `${allowed.slice(0, -1).join(', ')} and ${allowed.at(-1)}` : (allowed[0] ?? 'none');
      ctx.fail(`\`${written[i] ?? key}\` is not supported on the connection to ${options.what}; only ${list} apply here`, sub('policies', written[i] ?? key));
    }
  });
  if (options.defaults) {
    const missing = Object.fromEntries(Object.entries(options.defaults).filter(([key]) => !policies.has(key)));
    if (Object.keys(missing).length > 0) policies = (await ctx.compilePolicies('backendPolicies', missing, sub('policies'))).layer(policies);
  }
  if (options.inherit) policies = options.inherit.layer(policies);
  const ownTls = policies.has('backendTLS');
  const tls = ownTls ? (policies.facets.tls ?? {}) : policies.facets.tls;

  let address: UpstreamAddress;
  let backend: BackendInstance | undefined;
  if (options.host !== undefined) {
    const parsed = parseUpstreamAddress(options.host, {
      tls: tls !== undefined,
      port: options.port,
      path: options.path,
      paths: options.paths,
      defaultPath: options.defaultPath,
      requirePort: options.requirePort,
    });
    const hostField = options.hostField ?? 'host';
    // A problem is told at a field the config has: the port inside `host` when there is no `port` field.
    if ('message' in parsed) return ctx.fail(parsed.message, sub(parsed.field === 'host' || options[parsed.field] === undefined ? hostField : parsed.field));
    if (parsed.scheme === 'http' && policies.has('backendTLS')) {
      ctx.fail('`http://` asks for plaintext, but `policies.backendTLS` asks for TLS; drop the scheme or use `https://`', sub(hostField));
    }
    address = parsed;
  } else if (options.service !== undefined) {
    const authority = serviceAuthority(options.service);
    if (typeof authority !== 'string') return ctx.fail(authority.message, sub(...authority.sub));
    const parsed = parseUpstreamAddress(authority, { tls: tls !== undefined, requirePort: true, paths: options.paths, defaultPath: options.defaultPath });
    if ('message' in parsed) return ctx.fail(parsed.message, sub('service'));
    address = parsed;
  } else if (options.backend !== undefined) {
    backend = await ctx.namedBackend(options.backend, sub('backend'));
    const origin = backend.target?.origin;
    if (!origin) return ctx.fail(`backend \`${options.backend}\` does not forward to one \`host\`; use a host backend`, sub('backend'));
    const parsed = parseUpstreamAddress(origin, { tls: tls !== undefined, paths: options.paths, defaultPath: options.defaultPath });
    if ('message' in parsed) return ctx.fail(parsed.message, sub('backend'));
    address = { ...parsed, secure: parsed.secure || tls !== undefined };
  } else {
    return ctx.fail(`${options.what} needs one of \`host\`, \`service\` or \`backend\``, at);
  }

  // A named backend's own pool, unless the connection sets TLS of its own.
  let pool: UpstreamTarget | undefined = ownTls ? undefined : backend?.target;
  const target = (): UpstreamTarget =>
    (pool ??= ctx.http.target({ origin: address.origin, tls: address.secure ? tls : undefined, authority: options.authority }));
  return {
    origin: address.origin,
    secure: address.secure,
    authority: address.authority,
    path: address.path,
    pathGiven: address.pathGiven,
    tls,
    policies,
    backend,
    get target() {
      return target();
    },
    request(call, ex) {
      const hook = ex ? policies.attemptHook(ex) : undefined;
      return target().request({ ...call, signal: call.signal ?? ex?.signal, onAttempt: call.onAttempt ?? hook, what: call.what ?? options.what });
    },
  };
}
