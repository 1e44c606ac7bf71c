import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as jose from 'jose';
import Provider from 'oidc-provider';
import { request } from 'undici';

/**
 * A real OAuth 2.0 / OIDC authorization server (panva's oidc-provider, REAL-PEERS.md §4) on 127.0.0.1: the
 * client-credentials grant with RFC 8707 resource indicators issues RS256 JWT access tokens (`typ: at+jwt`,
 * `aud` = the resource, no `nbf`), JWKS at `/jwks`.
 */
export interface OidcProviderOptions {
  /** Access-token lifetime in seconds (default 300). */
  ttl?: number;
  /** Resource used when a token request names none (the default `aud`). */
  defaultResource?: string;
  /** Extra claims in every access token (default `{team: 'qa', tenant: 'acme'}`). */
  claims?: Record<string, unknown>;
  /** Open dynamic client registration (RFC 7591) at `/reg`, advertised as `registration_endpoint`. */
  registration?: boolean;
}

export interface RunningOidcProvider {
  readonly issuer: string;
  readonly port: number;
  readonly jwksUri: string;
  /** `kid` of the current signing key. */
  readonly kid: string;
  /** Requests served on `/jwks` so far. */
  readonly jwksRequests: number;
  /** Get an access token with the client-credentials grant. */
  token(options?: { resource?: string; scope?: string }): Promise<string>;
  /**
   * Rotate the signing key: a new provider instance with a fresh key (new `kid`) takes over the same port. With
   * `keepOld`, the JWKS still lists the previous key. Returns the new `kid`.
   */
  rotateKey(options?: { keepOld?: boolean }): Promise<string>;
  close(): Promise<void>;
}

export const TEST_CLIENT = { id: 'mcp-test-client', secret: 'mcp-test-secret' };

type Jwk = jose.JWK & { kid: string };

async function newKey(kid: string): Promise<Jwk> {
  const { privateKey } = await jose.generateKeyPair('RS256', { extractable: true });
  return { ...(await jose.exportJWK(privateKey)), kid, alg: 'RS256', use: 'sig' };
}

export async function startOidcProvider(options: OidcProviderOptions = {}): Promise<RunningOidcProvider> {
  let handler: ((req: IncomingMessage, res: ServerResponse) => void) | undefined;
  let jwksRequests = 0;
  const server: Server = createServer((req, res) => {
    if (req.url?.startsWith('/jwks')) jwksRequests++;
    handler!(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const issuer = `http://127.0.0.1:${port}`;
  const defaultResource = options.defaultResource ?? 'http://127.0.0.1:3000/mcp';
  const claims = options.claims ?? { team: 'qa', tenant: 'acme' };
  let generation = 1;
  let keys: Jwk[] = [await newKey('test-key-1')];

  const build = (): void => {
    const provider = new Provider(issuer, {
      jwks: { keys },
      clients: [
        {
          client_id: TEST_CLIENT.id,
          client_secret: TEST_CLIENT.secret,
          grant_types: ['client_credentials'],
          redirect_uris: [],
          response_types: [],
          token_endpoint_auth_method: 'client_secret_basic',
          scope: 'mcp:tools mcp:admin',
        },
      ],
      scopes: ['openid', 'mcp:tools', 'mcp:admin'],
      features: {
        devInteractions: { enabled: false },
        clientCredentials: { enabled: true },
        introspection: { enabled: true },
        registration: { enabled: options.registration ?? false },
        resourceIndicators: {
          enabled: true,
          defaultResource: () => defaultResource,
          useGrantedResource: () => true,
          getResourceServerInfo: (_ctx: unknown, resourceIndicator: string) => ({
            scope: 'mcp:tools mcp:admin',
            audience: resourceIndicator,
            accessTokenTTL: options.ttl ?? 300,
            accessTokenFormat: 'jwt',
            // The newest key signs (oidc-provider picks the first matching key of the set).
            jwt: { sign: { alg: 'RS256', kid: keys[0]!.kid } },
          }),
        },
      },
      ttl: { ClientCredentials: options.ttl ?? 300 },
      extraTokenClaims: () => claims,
    });
    handler = provider.callback();
  };
  build();

  return {
    issuer,
    port,
    jwksUri: `${issuer}/jwks`,
    get kid() {
      return keys[0]!.kid;
    },
    get jwksRequests() {
      return jwksRequests;
    },
    async token({ resource, scope = 'mcp:tools' } = {}) {
      const form = new URLSearchParams({ grant_type: 'client_credentials', scope });
      if (resource) form.set('resource', resource);
      const res = await request(`${issuer}/token`, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          authorization: `Basic ${Buffer.from(`${TEST_CLIENT.id}:${TEST_CLIENT.secret}`).toString('base64')}`,
        },
        body: form.toString(),
      });
      const body = (await res.body.json()) as { access_token?: string; error?: string; error_description?: string };
      if (!body.access_token) throw new Error(`token request failed: ${res.statusCode} ${body.error} ${body.error_description ?? ''}`);
      return body.access_token;
    },
    async rotateKey({ keepOld = false } = {}) {
      generation++;
      const key = await newKey(`test-key-${generation}`);
      keys = keepOld ? [key, ...keys] : [key];
      build();
      return key.kid;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
