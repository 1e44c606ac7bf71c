/**
 * The discovery documents `mcpAuthentication` serves (BEHAVIOUR.md §4.2): RFC 9728 protected-resource metadata built
 * from the config, and the issuer's RFC 8414 metadata relayed with the `auth0` / `keycloak` adapter adjustments.
 */
import { discardBody, readCappedText } from 'switchyard/sdk';
import type { Logger, UpstreamTarget } from 'switchyard/sdk';

export const PROTECTED_RESOURCE_PREFIX = '/.well-known/oauth-protected-resource';
export const AUTHORIZATION_SERVER_PREFIX = '/.well-known/oauth-authorization-server';
export const CLIENT_REGISTRATION_SUFFIX = '/client-registration';

/** The `mcp_protocol_version` advertised in protected-resource metadata, as the reference gateway does. */
export const METADATA_MCP_PROTOCOL_VERSION = '2025-06-18';

export type ProviderName = 'auth0' | 'keycloak';

export interface ResourceMetadataConfig {
  resource: string;
  scopesSupported?: string[];
  bearerMethodsSupported?: ('header' | 'body' | 'query')[];
  resourceDocumentation?: string;
  resourcePolicyUri?: string;
}

/** Config key -> RFC 9728 field, in the order they are written. */
const RFC_FIELDS: readonly (readonly [keyof ResourceMetadataConfig, string])[] = [
  ['resource', 'resource'],
  ['scopesSupported', 'scopes_supported'],
  ['bearerMethodsSupported', 'bearer_methods_supported'],
  ['resourceDocumentation', 'resource_documentation'],
  ['resourcePolicyUri', 'resource_policy_uri'],
];

/** The rest of `path` after a well-known `prefix` (`''` or `/mcp`), or undefined when `path` is not under it. */
export function wellKnownSuffix(path: string, prefix: string): string | undefined {
  if (!path.startsWith(prefix)) return undefined;
  if (path.length === prefix.length) return '';
  return path.charCodeAt(prefix.length) === 47 /* / */ ? path.slice(prefix.length) : undefined;
}

/** A URL inside a quoted header parameter: quotes and backslashes percent-encoded so the quoting holds. */
export function quotable(url: string): string {
  return url.replace(/["\\]/g, (c) => encodeURIComponent(c));
}

/**
 * RFC 9728 metadata (BEHAVIOUR.md §4.2): `resource`, `authorization_servers` (the issuer, or the gateway URL when an
 * adapter rewrites the AS metadata), `mcp_protocol_version`, `resource_type`, then the configured fields.
 */
export function protectedResourceMetadata(config: ResourceMetadataConfig, authorizationServer: string): Record<string, unknown> {
  const out: Record<string, unknown> = {
    resource: config.resource,
    authorization_servers: [authorizationServer],
    mcp_protocol_version: METADATA_MCP_PROTOCOL_VERSION,
    resource_type: 'mcp-server',
  };
  for (const [key, field] of RFC_FIELDS) {
    const value = config[key];
    if (value !== undefined) out[field] = value;
  }
  return out;
}

/**
 * Where the issuer's metadata is read: RFC 8414 insertion form (`<origin>/.well-known/oauth-authorization-server<path>`)
 * by default and for auth0; Keycloak publishes it at `<issuer>/.well-known/openid-configuration`.
 */
export function authorizationServerMetadataUrl(issuer: string, provider: ProviderName | undefined): URL {
  if (provider === 'keycloak') return new URL(`${issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`);
  const url = new URL(issuer);
  const path = url.pathname.replace(/\/+$/, '');
  return new URL(`${url.origin}${AUTHORIZATION_SERVER_PREFIX}${path}`);
}

/** A metadata document that cannot be served; the policy answers 500. */
export class MetadataError extends Error {}

/**
 * The adapter adjustments (BEHAVIOUR.md §4.2) on a copy of the issuer's metadata. `requestUrl` is this metadata
 * request's URL (keycloak's registration endpoint is relative to it).
 */
export function adjustMetadata(
  metadata: Readonly<Record<string, unknown>>,
  provider: ProviderName | undefined,
  audience: string,
  requestUrl: string,
): Record<string, unknown> {
  const out = { ...metadata };
  if (provider === 'auth0') {
    const endpoint = out.authorization_endpoint;
    if (typeof endpoint !== 'string') throw new MetadataError('the authorization server metadata has no `authorization_endpoint` (needed by the auth0 adapter)');
    let url: URL;
    try {
      url = new URL(endpoint);
    } catch {
      throw new MetadataError('the authorization server metadata has an invalid `authorization_endpoint`');
    }
    url.searchParams.set('audience', audience);
    out.authorization_endpoint = url.href;
  } else if (provider === 'keycloak') {
    if (typeof out.registration_endpoint !== 'string') {
      throw new MetadataError('the authorization server metadata has no `registration_endpoint` (needed by the keycloak adapter)');
    }
    out.registration_endpoint = `${requestUrl}${CLIENT_REGISTRATION_SUFFIX}`;
  }
  return out;
}

const MAX_METADATA_BYTES = 256 * 1024;
const FETCH_TIMEOUT_MS = 5000;
/** Fresh metadata is reused this long: discovery bursts hit the issuer once, edits there show up within a minute. */
export const METADATA_TTL_MS = 60_000;

/**
 * After a failed fetch the issuer is asked again only this long later: discovery documents are public, so without a
 * pause every unauthenticated request made one upstream call to an issuer that was already failing.
 */
export const METADATA_RETRY_MS = 5_000;

/**
 * Fetches the issuer's metadata through the gateway's upstream pools and keeps it for `METADATA_TTL_MS`. When a
 * refresh fails the last good copy is kept and served (as a JWKS keeps its keys, ADR 0020); a failure with no copy
 * is answered again without a fetch until `METADATA_RETRY_MS` has passed (ADR 0198).
 */
export class AuthorizationServerMetadata {
  readonly url: URL;
  private readonly target: UpstreamTarget;
  private readonly now: () => number;
  private cached: { value: Readonly<Record<string, unknown>>; until: number } | undefined;
  private failed: { error: unknown; until: number } | undefined;
  private pending: Promise<Readonly<Record<string, unknown>>> | undefined;
  private readonly logger: Logger | undefined;

  /** `target`: the connection to the metadata URL's origin. */
  constructor(url: URL, target: UpstreamTarget, now: () => number = Date.now, logger?: Logger) {
    this.url = url;
    this.target = target;
    this.now = now;
    this.logger = logger;
  }

  /** The metadata, from the cache or fetched (concurrent callers share one fetch). */
  get(): Promise<Readonly<Record<string, unknown>>> {
    const now = this.now();
    const hit = this.cached;
    if (hit && hit.until > now) return Promise.resolve(hit.value);
    if (this.failed && this.failed.until > now) return Promise.reject(this.failed.error as Error);
    this.pending ??= this.fetch().then(
      (value) => {
        this.cached = { value, until: this.now() + METADATA_TTL_MS };
        this.failed = undefined;
        this.pending = undefined;
        return value;
      },
      (err: unknown) => {
        this.pending = undefined;
        const until = this.now() + METADATA_RETRY_MS;
        if (this.cached) {
          this.logger?.warn('authorization server metadata refresh failed; serving the last good copy', { url: this.url.href, error: (err as Error).message });
          this.cached = { value: this.cached.value, until };
          return this.cached.value;
        }
        this.failed = { error: err, until };
        throw err;
      },
    );
    return this.pending;
  }

  private async fetch(): Promise<Readonly<Record<string, unknown>>> {
    const res = await this.target.request({
      method: 'GET',
      path: `${this.url.pathname}${this.url.search}`,
      headers: { accept: 'application/json' },
      timeoutMs: FETCH_TIMEOUT_MS,
    });
    if (res.status < 200 || res.status >= 300) {
      discardBody(res.body);
      throw new MetadataError(`${this.url.href} answered ${res.status}`);
    }
    const text = await readCappedText(res.body, MAX_METADATA_BYTES);
    let doc: unknown;
    try {
      doc = JSON.parse(text);
    } catch {
      throw new MetadataError(`${this.url.href} did not answer JSON`);
    }
    if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) throw new MetadataError(`${this.url.href} did not answer a JSON object`);
    return Object.freeze(doc as Record<string, unknown>);
  }
}
