import type { BackendInstance, CompileContext, ConfigPath, Connection, UpstreamAddressConfig, UpstreamTls } from 'switchyard/sdk';
import { compileHeaderModifier } from '../header-modifier/header-modifier.ts';
import type { HeaderModifier, HeaderModifierConfig } from '../header-modifier/header-modifier.ts';

/**
 * The address forms shared by the policies that call an external service (`extAuthz`, `remoteRateLimit`; SPEC
 * §8.2, BEHAVIOUR.md §5.6/§8.2): exactly one of `host`, `service`, `backend`, plus connection `policies`. Plain
 * data and config checks only; no gRPC here, so the HTTP variant of extAuthz can use it too.
 */

/** The address part of a policy's config (the schema makes exactly one of `host`, `service`, `backend` present). */
export type ServiceTargetConfig = UpstreamAddressConfig;

/** A resolved service target: the address, TLS settings and the headers to send on every call. */
export interface ServiceTarget {
  /** `host:port` as it is dialled (IPv6 literals in brackets). */
  readonly target: string;
  readonly secure: boolean;
  /** From `policies.backendTLS`; undefined when it is not set (TLS then uses the system roots, if `secure`). */
  readonly tls: UpstreamTls | undefined;
  /** From `policies.requestHeaderModifier`; undefined when it is not set. */
  readonly headers: HeaderModifier | undefined;
  /** The named backend, for the `backend` form. */
  readonly backend: BackendInstance | undefined;
}

/** The connection policies a service target accepts under `policies`. */
export const SUPPORTED_CONNECTION_POLICIES: readonly string[] = ['backendTLS', 'requestHeaderModifier'];

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
 * Resolve `host` / `service` / `backend` and `policies` of a policy's value with `ctx.connect` (a `host` must carry
 * its port), failing the load at the field that is wrong; `requestHeaderModifier` is also checked as gRPC
 * metadata when the calls are gRPC. `at`: where the address sits below the plugin's value.
 */
export async function resolveServiceTarget(
  config: ServiceTargetConfig,
  ctx: CompileContext,
  options: ResolveOptions,
  at: ConfigPath = [],
): Promise<ServiceTarget & { readonly connection: Connection }> {
  const { host, service, backend, policies } = config;
  const connection = await ctx.connect({ host, service, backend, policies, what: `the ${options.what}`, at, allow: SUPPORTED_CONNECTION_POLICIES, requirePort: true });
  let headers: HeaderModifier | undefined;
  const modifierConfig = config.policies?.requestHeaderModifier as HeaderModifierConfig | undefined;
  if (modifierConfig) {
    const sub = [...at, 'policies', 'requestHeaderModifier'];
    const compiled = compileHeaderModifier(modifierConfig);
    if (typeof compiled === 'string') return ctx.fail(compiled, sub);
    if (options.grpc) {
      for (const field of ['add', 'set'] as const) {
        for (const [name, value] of Object.entries(modifierConfig[field] ?? {})) {
          const problem = metadataProblem(name.toLowerCase(), String(value));
          if (problem) ctx.fail(problem, [...sub, field, name]);
        }
      }
    }
    headers = compiled;
  }
  const tls = connection.policies.has('backendTLS') ? connection.tls : undefined;
  if (tls?.alpn && options.grpc) ctx.warn('`alpn` does not apply to a gRPC service: the connection always negotiates `h2`', [...at, 'policies', 'backendTLS', 'alpn']);
  return { target: connection.authority, secure: connection.secure, tls, headers, backend: connection.backend, connection };
}
