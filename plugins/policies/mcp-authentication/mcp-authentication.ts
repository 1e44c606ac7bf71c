import { jsonErrorReply, jsonReply, localReply, principal, readCappedText } from 'switchyard/sdk';
import type { CompileContext, Exchange, HeaderMap, PolicyInstance, Reply } from 'switchyard/sdk';
import { AUTHORIZATION_ONLY } from '../../lib/credentials/credentials.ts';
import { bearerToken, compileJwtVerifier, jwtAttribute, jwtPrincipal } from '../../lib/jwt/index.ts';
import type { JwksConfig, JwtResult } from '../../lib/jwt/index.ts';
import {
  adjustMetadata,
  AUTHORIZATION_SERVER_PREFIX,
  AuthorizationServerMetadata,
  authorizationServerMetadataUrl,
  CLIENT_REGISTRATION_SUFFIX,
  MetadataError,
  PROTECTED_RESOURCE_PREFIX,
  protectedResourceMetadata,
  quotable,
  wellKnownSuffix,
} from './metadata.ts';
import type { ProviderName, ResourceMetadataConfig } from './metadata.ts';

export interface McpAuthenticationConfig {
  issuer: string;
  audiences: string[];
  jwks: JwksConfig;
  mode?: 'strict' | 'optional';
  provider?: Partial<Record<'auth0' | 'identityProviderA' | 'keycloak' | 'identityProviderB', Record<string, never>>>;
  resourceMetadata?: ResourceMetadataConfig;
  jwtValidationOptions?: { requiredClaims?: string[] };
}

/** NAMES.md: the neutral words are exact aliases; the real name is used from here on. */
const PROVIDER_NAMES: Readonly<Record<string, ProviderName>> = {
  auth0: 'auth0',
  identityProviderA: 'auth0',
  keycloak: 'keycloak',
  identityProviderB: 'keycloak',
};

/** Common start of both discovery paths: one `startsWith` keeps ordinary requests on the fast path. */
const WELL_KNOWN_OAUTH = '/.well-known/oauth-';
const MAX_REGISTRATION_BYTES = 64 * 1024;
const REGISTRATION_TIMEOUT_MS = 10_000;

function cors(methods: string): HeaderMap {
  return {
    'access-control-allow-origin': '*',
    'access-control-allow-methods': methods,
    'access-control-allow-headers': 'content-type',
  };
}

export function normalizeProvider(provider: McpAuthenticationConfig['provider']): ProviderName | undefined {
  if (provider === undefined) return undefined;
  const key = Object.keys(provider)[0];
  return key === undefined ? undefined : PROVIDER_NAMES[key];
}

export async function compileMcpAuthentication(config: McpAuthenticationConfig, ctx: CompileContext): Promise<PolicyInstance> {
  const provider = normalizeProvider(config.provider);
  const metadataConfig = config.resourceMetadata;
  let resourceOrigin: string | undefined;
  if (metadataConfig !== undefined) {
    const url = URL.parse(metadataConfig.resource);
    if (url === null) return ctx.fail(`\`${metadataConfig.resource}\` is not an absolute URL`, ['resourceMetadata', 'resource']);
    if (url.hash !== '') ctx.fail('the resource URI must not contain a fragment (RFC 8707)', ['resourceMetadata', 'resource']);
    resourceOrigin = url.origin;
  }
  let metadataUrl: URL;
  try {
    metadataUrl = authorizationServerMetadataUrl(config.issuer, provider);
  } catch {
    return ctx.fail(`the issuer \`${config.issuer}\` is not a URL, so its metadata cannot be located`, ['issuer']);
  }

  const verifier = await compileJwtVerifier([{ config, at: [] }], ctx);
  const strict = config.mode === 'strict';
  if (config.mode === undefined) {
    ctx.warn('`mode` is not set, so requests without a token pass unauthenticated (optional mode, SPEC 5.1); set `mode: strict` to require a valid token');
  }
  const audience = config.audiences[0]!;
  const asConnection = await ctx.connect({ host: metadataUrl.href, paths: 'allow', allow: [], what: 'the authorization server', hostField: 'issuer', authority: 'target' });
  const asMetadata = new AuthorizationServerMetadata(metadataUrl, asConnection.target, Date.now, ctx.logger.child({ policy: 'mcpAuthentication' }));

  /**
   * 401 with the RFC 9728 challenge pointing clients at this resource's metadata (DECIDED 4). A token that was sent
   * and refused adds `error="invalid_token"` (RFC 6750 3.1); a request without one gets no error code (RFC 6750 3.1:
   * a request that lacks authentication information should not get one).
   */
  const reject = (ex: Exchange, message: string, invalidToken: boolean): Reply => {
    const base = resourceOrigin ?? ex.externalOrigin;
    const metadata = `resource_metadata="${quotable(`${base}${PROTECTED_RESOURCE_PREFIX}${ex.path}`)}"`;
    const challenge = invalidToken ? `Bearer ${metadata}, error="invalid_token"` : `Bearer ${metadata}`;
    return jsonErrorReply(401, 'unauthorized', `authentication failure: ${message}`, { 'www-authenticate': challenge });
  };

  const finish = (ex: Exchange, result: JwtResult): Reply | undefined => {
    if (!result.ok) {
      // Keys not loaded yet (ADR 0020): 503, not a challenge that would send the client to re-authorize.
      if (result.reason === 'keys_unavailable') {
        return jsonErrorReply(503, 'authentication_unavailable', `authentication unavailable: ${result.message}`, { 'retry-after': String(result.retryAfterSeconds ?? 1) });
      }
      return reject(ex, result.message, true);
    }
    ex.set(jwtAttribute, result.claims);
    const sub = result.claims.sub;
    if (typeof sub === 'string') ex.logField('jwt.sub', sub);
    const who = jwtPrincipal(result.claims);
    if (who !== undefined) ex.set(principal, who);
    return undefined;
  };

  const authenticate = (ex: Exchange): Reply | undefined | Promise<Reply | undefined> => {
    const token = bearerToken(ex.headers.authorization);
    if (token === undefined) return strict ? reject(ex, 'no bearer token found', false) : undefined;
    const result = verifier.verify(token);
    // Cached verifications answer synchronously: no promise on the hot path.
    if (result instanceof Promise) return result.then((r) => finish(ex, r));
    return finish(ex, result);
  };

  if (metadataConfig === undefined) return { credentialHeaders: AUTHORIZATION_ONLY, onRequest: authenticate };

  const protectedResource = (ex: Exchange, suffix: string): Reply => {
    // With an adapter the gateway serves the AS metadata itself, at the RFC 8414 location of this URL.
    const server = provider === undefined ? config.issuer : `${ex.externalOrigin}${suffix}`;
    return jsonReply(200, protectedResourceMetadata(metadataConfig, server), cors('GET, OPTIONS'));
  };

  const authorizationServer = async (ex: Exchange): Promise<Reply> => {
    try {
      const metadata = await asMetadata.get();
      return jsonReply(200, adjustMetadata(metadata, provider, audience, `${ex.externalOrigin}${ex.path}`), cors('GET, OPTIONS'));
    } catch (err) {
      ctx.logger.warn('cannot serve the authorization server metadata', { url: metadataUrl.href, error: (err as Error).message });
      const message = err instanceof MetadataError ? err.message : `cannot fetch ${metadataUrl.href}: ${(err as Error).message}`;
      return jsonErrorReply(500, 'metadata_unavailable', `authorization server metadata unavailable: ${message}`, cors('GET, OPTIONS'));
    }
  };

  /** Keycloak's registration endpoint lacks CORS for browser clients: the adapter points clients here and relays. */
  const clientRegistration = async (ex: Exchange): Promise<Reply> => {
    const headers = cors('POST, OPTIONS');
    try {
      const endpoint = (await asMetadata.get()).registration_endpoint;
      if (typeof endpoint !== 'string') throw new MetadataError('the authorization server metadata has no `registration_endpoint`');
      const url = new URL(endpoint);
      const body = await ex.bufferBody(MAX_REGISTRATION_BYTES);
      const out: HeaderMap = { 'content-type': ex.headers['content-type'] ?? 'application/json', accept: 'application/json' };
      // An initial access token, when the realm requires one, is meant for the registration endpoint.
      if (ex.headers.authorization !== undefined) out.authorization = ex.headers.authorization;
      const res = await ctx.http.target({ origin: url.origin, authority: 'target' }).request({
        method: 'POST',
        path: `${url.pathname}${url.search}`,
        headers: out,
        body,
        signal: ex.signal,
        timeoutMs: REGISTRATION_TIMEOUT_MS,
      });
      const text = await readCappedText(res.body, MAX_REGISTRATION_BYTES);
      const type = res.headers['content-type'];
      if (type !== undefined) headers['content-type'] = type;
      return localReply(res.status, text, headers);
    } catch (err) {
      if ((err as { status?: number }).status === 413) throw err;
      ctx.logger.warn('client registration relay failed', { error: (err as Error).message });
      return jsonErrorReply(502, 'registration_failed', `client registration failed: ${(err as Error).message}`, headers);
    }
  };

  return {
    credentialHeaders: AUTHORIZATION_ONLY,
    onRequest(ex) {
      // The discovery documents are public: served before, and without, token validation.
      // The routed path (normalised, not yet rewritten at authn): the client's spelling (`%2E`, `//`, `..`) could
      // serve the document on a request routed as the endpoint, or challenge one routed as the document.
      if (ex.path.startsWith(WELL_KNOWN_OAUTH)) {
        const path = ex.path;
        const method = ex.method;
        const prSuffix = wellKnownSuffix(path, PROTECTED_RESOURCE_PREFIX);
        if (prSuffix !== undefined) {
          if (method === 'GET' || method === 'HEAD') return protectedResource(ex, prSuffix);
          if (method === 'OPTIONS') return localReply(200, null, cors('GET, OPTIONS'));
          return methodNotAllowed('GET, OPTIONS');
        }
        if (wellKnownSuffix(path, AUTHORIZATION_SERVER_PREFIX) !== undefined) {
          if (provider === 'keycloak' && path.endsWith(CLIENT_REGISTRATION_SUFFIX)) {
            if (method === 'POST') return clientRegistration(ex);
            if (method === 'OPTIONS') return localReply(200, null, cors('POST, OPTIONS'));
            return methodNotAllowed('POST, OPTIONS');
          }
          if (method === 'GET' || method === 'HEAD') return authorizationServer(ex);
          if (method === 'OPTIONS') return localReply(200, null, cors('GET, OPTIONS'));
          return methodNotAllowed('GET, OPTIONS');
        }
      }
      return authenticate(ex);
    },
  };
}

function methodNotAllowed(allow: string): Reply {
  return jsonErrorReply(405, 'method_not_allowed', `this discovery endpoint accepts ${allow}`, { allow, ...cors(allow) });
}
