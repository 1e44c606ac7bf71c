import { isIP } from 'node:net';
import type { BackendInstance, CompileContext, UpstreamTls } from 'switchyard/sdk';
import { compileHeaderModifier } from '../header-modifier/header-modifier.ts';
import type { HeaderModifier, HeaderModifierConfig } from '../header-modifier/header-modifier.ts';

/**
 * The address forms shared by the policies that call an external service (`extAuthz`, `remoteRateLimit`; SPEC
 * §8.2, BEHAVIOUR.md §5.6/§8.2): exactly one of `host`, `service`, `backend`, plus connection `policies`. Plain
 * data and config checks only; no gRPC here, so the HTTP variant of extAuthz can use it too.
 */

/** `service`: a Kubernetes-style service reference. Without a control plane it resolves by DNS to `<hostname>:<port>`. */
export interface ServiceRefConfig {
  name: string | { namespace: string; hostname: string };
  port: number;
}

/** The address part of a policy's config (the schema makes exactly one of the three present). */
export interface ServiceTargetConfig {
  host?: string;
  service?: ServiceRefConfig;
  backend?: string;
  policies?: Record<string, unknown>;
}

/** Where a service lives. */
export interface GrpcAddress {
  /** `host:port` as it is dialled (IPv6 literals in brackets). */
  readonly target: string;
  readonly secure: boolean;
}

/** A resolved service target: the address, TLS settings and the headers to send on every call. */
export interface ServiceTarget extends GrpcAddress {
  /** From `policies.backendTLS`; undefined when it is not set (TLS then uses the system roots, if `secure`). */
  readonly tls: UpstreamTls | undefined;
  /** From `policies.requestHeaderModifier`; undefined when it is not set. */
  readonly headers: HeaderModifier | undefined;
  /** The named backend, for the `backend` form. */
  readonly backend: BackendInstance | undefined;
}

/** The connection policies a service target accepts under `policies`. */
export const SUPPORTED_CONNECTION_POLICIES: readonly string[] = ['backendTLS', 'requestHeaderModifier'];

/**
 * Parse `host:port`, `[v6]:port` or `http(s)://host:port` (the scheme picks plaintext or TLS). Returns an error
 * message when the value is not an address.
 */
export function parseGrpcAddress(value: string): (GrpcAddress & { scheme: 'http' | 'https' | undefined }) | string {
  let rest = value.trim();
  let scheme: 'http' | 'https' | undefined;
  const m0 = /^([a-z][a-z0-9+.-]*):\/\//i.exec(rest);
  if (m0) {
    const s = m0[1]!.toLowerCase();
    if (s !== 'http' && s !== 'https') return `unsupported scheme \`${s}\` (use http or https, or no scheme)`;
    scheme = s;
    rest = rest.slice(m0[0].length).replace(/\/$/, '');
  }
  const m = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9._-]+):(\d{1,5})$/.exec(rest);
  if (!m) return `\`${value}\` is not a \`host:port\` address`;
  const port = Number(m[2]);
  if (port < 1 || port > 65535) return `port ${m[2]} is out of range`;
  return { target: `${m[1]}:${port}`, secure: scheme === 'https', scheme };
}

const DNS_LABEL = '[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?';
const DNS_NAME = new RegExp(`^${DNS_LABEL}(?:\\.${DNS_LABEL})*\\.?$`);

/** A config problem at a path below the policy's value. */
export interface TargetIssue {
  readonly message: string;
  readonly sub: readonly (string | number)[];
}

/**
 * The `host:port` a `service` reference dials: `<hostname>:<port>`, the hostname being the service's DNS name
 * (`ratelimit.default.svc.cluster.local`). `name` is `{namespace, hostname}` or the string `<namespace>/<hostname>`.
 */
export function serviceAddress(ref: ServiceRefConfig): string | TargetIssue {
  let namespace: string;
  let hostname: string;
  let hostSub: (string | number)[];
  let nsSub: (string | number)[];
  if (typeof ref.name === 'string') {
    const parts = ref.name.split('/');
    if (parts.length !== 2) {
      return { message: `\`${ref.name}\` is not a service name: write \`<namespace>/<hostname>\` (exactly one \`/\`), or \`{namespace, hostname}\``, sub: ['service', 'name'] };
    }
    [namespace, hostname] = parts as [string, string];
    hostSub = nsSub = ['service', 'name'];
  } else {
    namespace = ref.name.namespace;
    hostname = ref.name.hostname;
    hostSub = ['service', 'name', 'hostname'];
    nsSub = ['service', 'name', 'namespace'];
  }
  namespace = namespace.trim();
  hostname = hostname.trim();
  if (!namespace) return { message: 'the service namespace is empty', sub: nsSub };
  if (!hostname) return { message: 'the service hostname is empty', sub: hostSub };
  const v6 = hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
  if (isIP(v6) === 0 && (hostname.length > 254 || !DNS_NAME.test(hostname))) {
    return { message: `\`${hostname}\` is not a host name (the service's DNS name, such as \`ratelimit.${namespace}.svc.cluster.local\`)`, sub: hostSub };
  }
  const port = ref.port;
  if (!Number.isInteger(port) || port < 1 || port > 65535) return { message: `port ${String(port)} is out of range (1-65535)`, sub: ['service', 'port'] };
  return `${isIP(v6) === 6 ? `[${v6}]` : hostname}:${port}`;
}

/** Header names gRPC reserves for itself or HTTP/2 forbids; they cannot be sent as call metadata. */
const RESERVED_METADATA = new Set(['content-type', 'te', 'host', 'user-agent', 'connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade']);

/**
 * Why a header cannot be sent as gRPC metadata, or undefined when it can. gRPC metadata keys are lower-case
 * `[0-9a-z_.-]`; values printable ASCII; `-bin` keys carry bytes, which a YAML string does not give.
 */
export function metadataProblem(name: string, value: string): string | undefined {
  if (!/^[0-9a-z_.-]+$/.test(name)) return `\`${name}\` cannot be sent as gRPC metadata (names are letters, digits, \`_\`, \`.\` and \`-\`)`;
  if (name.startsWith('grpc-') || RESERVED_METADATA.has(name)) return `\`${name}\` is reserved by gRPC and HTTP/2; it cannot be sent as call metadata`;
  if (name.endsWith('-bin')) return `\`${name}\` is a binary (\`-bin\`) metadata key; only text metadata can be configured`;
  if (!/^[\x20-\x7e]*$/.test(value)) return `the value of \`${name}\` must be printable ASCII to be sent as gRPC metadata`;
  return undefined;
}

export interface ResolveOptions {
  /** What the service is, for messages: `rate limit service`. */
  readonly what: string;
  /** The calls are gRPC: headers must be valid call metadata, and `backendTLS.alpn` does not apply. */
  readonly grpc: boolean;
}

/**
 * Resolve `host` / `service` / `backend` and `policies` of a policy's value, failing the load at the field that is
 * wrong. `policies` is compiled as a `backendPolicies` map (so `backendTLS` is validated and read exactly as on a
 * backend); policies that do not apply to the connection are config errors.
 */
export async function resolveServiceTarget(config: ServiceTargetConfig, ctx: CompileContext, options: ResolveOptions): Promise<ServiceTarget> {
  let tls: UpstreamTls | undefined;
  let headers: HeaderModifier | undefined;
  const policies = config.policies;
  if (policies && Object.keys(policies).length > 0) {
    const written = Object.keys(policies);
    // Compiles each policy with its own checks; the kernel renames aliases to their keys in place (same order).
    const set = await ctx.compilePolicies('backendPolicies', policies, ['policies']);
    const canonical = Object.keys(policies);
    canonical.forEach((key, i) => {
      if (!SUPPORTED_CONNECTION_POLICIES.includes(key)) {
        ctx.fail(
          `\`${written[i] ?? key}\` is not supported on the connection to the ${options.what}; only ${SUPPORTED_CONNECTION_POLICIES.map((k) => `\`${k}\``).join(' and ')} apply here`,
          ['policies', written[i] ?? key],
        );
      }
    });
    if (set.has('backendTLS')) tls = set.facets.tls ?? {};
    const modifierConfig = policies.requestHeaderModifier as HeaderModifierConfig | undefined;
    if (modifierConfig) {
      const compiled = compileHeaderModifier(modifierConfig);
      if (typeof compiled === 'string') return ctx.fail(compiled, ['policies', 'requestHeaderModifier']);
      if (options.grpc) {
        for (const field of ['add', 'set'] as const) {
          for (const [name, value] of Object.entries(modifierConfig[field] ?? {})) {
            const problem = metadataProblem(name.toLowerCase(), String(value));
            if (problem) ctx.fail(problem, ['policies', 'requestHeaderModifier', field, name]);
          }
        }
      }
      headers = compiled;
    }
    if (tls?.alpn && options.grpc) ctx.warn('`alpn` does not apply to a gRPC service: the connection always negotiates `h2`', ['policies', 'backendTLS', 'alpn']);
  }

  if (config.host !== undefined) {
    const parsed = parseGrpcAddress(config.host);
    if (typeof parsed === 'string') return ctx.fail(parsed, ['host']);
    if (parsed.scheme === 'http' && tls) ctx.fail('`http://` asks for plaintext, but `policies.backendTLS` asks for TLS; drop the scheme or use `https://`', ['host']);
    return { target: parsed.target, secure: parsed.secure || tls !== undefined, tls, headers, backend: undefined };
  }
  if (config.service !== undefined) {
    const address = serviceAddress(config.service);
    if (typeof address !== 'string') return ctx.fail(address.message, address.sub);
    return { target: address, secure: tls !== undefined, tls, headers, backend: undefined };
  }
  const backend = await ctx.namedBackend(config.backend!, ['backend']);
  const origin = backend.target?.origin;
  if (!origin) return ctx.fail(`backend \`${config.backend}\` does not forward to one \`host\`; use a host backend`, ['backend']);
  const parsed = parseGrpcAddress(origin);
  if (typeof parsed === 'string') return ctx.fail(parsed, ['backend']);
  return { target: parsed.target, secure: parsed.secure || tls !== undefined, tls, headers, backend };
}
