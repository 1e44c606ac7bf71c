import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { describe, it } from 'node:test';
import type { UpstreamCallOptions, UpstreamTarget } from 'switchyard/sdk';
import { normalizeProvider } from './mcp-authentication.ts';
import {
  adjustMetadata,
  AuthorizationServerMetadata,
  authorizationServerMetadataUrl,
  METADATA_RETRY_MS,
  METADATA_TTL_MS,
  MetadataError,
  protectedResourceMetadata,
  quotable,
  wellKnownSuffix,
} from './metadata.ts';

const PR = '/.well-known/oauth-protected-resource';

describe('mcpAuthentication metadata helpers', () => {
  it('finds the path after a well-known prefix, segment-aware', () => {
    assert.equal(wellKnownSuffix(PR, PR), '');
    assert.equal(wellKnownSuffix(`${PR}/mcp`, PR), '/mcp');
    assert.equal(wellKnownSuffix(`${PR}/a/b`, PR), '/a/b');
    assert.equal(wellKnownSuffix(`${PR}x`, PR), undefined);
    assert.equal(wellKnownSuffix('/mcp', PR), undefined);
  });

  it('locates the issuer metadata: RFC 8414 insertion form, keycloak openid-configuration', () => {
    assert.equal(authorizationServerMetadataUrl('http://127.0.0.1:4000', undefined).href, 'http://127.0.0.1:4000/.well-known/oauth-authorization-server');
    assert.equal(authorizationServerMetadataUrl('https://as.test/tenant1/', 'auth0').href, 'https://as.test/.well-known/oauth-authorization-server/tenant1');
    assert.equal(authorizationServerMetadataUrl('https://kc.test/realms/r/', 'keycloak').href, 'https://kc.test/realms/r/.well-known/openid-configuration');
  });

  it('builds RFC 9728 metadata with snake_case fields after the computed ones', () => {
    const doc = protectedResourceMetadata(
      { resource: 'https://gw.test/mcp', scopesSupported: ['a'], bearerMethodsSupported: ['header'], resourceDocumentation: 'https://d.test', resourcePolicyUri: 'https://p.test' },
      'https://as.test',
    );
    assert.deepEqual(Object.keys(doc), [
      'resource',
      'authorization_servers',
      'mcp_protocol_version',
      'resource_type',
      'scopes_supported',
      'bearer_methods_supported',
      'resource_documentation',
      'resource_policy_uri',
    ]);
    assert.deepEqual(doc.authorization_servers, ['https://as.test']);
    assert.deepEqual(protectedResourceMetadata({ resource: 'https://gw.test/mcp' }, 'x'), {
      resource: 'https://gw.test/mcp',
      authorization_servers: ['x'],
      mcp_protocol_version: '2025-06-18',
      resource_type: 'mcp-server',
    });
  });

  it('auth0 adds the audience to the authorization endpoint', () => {
    const out = adjustMetadata({ issuer: 'i', authorization_endpoint: 'https://as.test/authorize?x=1' }, 'auth0', 'https://gw.test/mcp', 'u');
    assert.equal(out.authorization_endpoint, 'https://as.test/authorize?x=1&audience=https%3A%2F%2Fgw.test%2Fmcp');
    assert.throws(() => adjustMetadata({ issuer: 'i' }, 'auth0', 'a', 'u'), MetadataError);
  });

  it('keycloak points registration at the gateway; no adapter copies unchanged', () => {
    const src = Object.freeze({ issuer: 'i', registration_endpoint: 'https://kc.test/reg' });
    const out = adjustMetadata(src, 'keycloak', 'a', 'https://gw.test/.well-known/oauth-authorization-server/mcp');
    assert.equal(out.registration_endpoint, 'https://gw.test/.well-known/oauth-authorization-server/mcp/client-registration');
    assert.equal(src.registration_endpoint, 'https://kc.test/reg', 'the cached document is not changed');
    assert.throws(() => adjustMetadata({ issuer: 'i' }, 'keycloak', 'a', 'u'), /registration_endpoint/);
    assert.deepEqual(adjustMetadata(src, undefined, 'a', 'u'), src);
  });

  it('accepts both spellings of the adapters', () => {
    assert.equal(normalizeProvider({ auth0: {} }), 'auth0');
    assert.equal(normalizeProvider({ identityProviderA: {} }), 'auth0');
    assert.equal(normalizeProvider({ keycloak: {} }), 'keycloak');
    assert.equal(normalizeProvider({ identityProviderB: {} }), 'keycloak');
    assert.equal(normalizeProvider(undefined), undefined);
  });

  it('quotes URLs for a header parameter', () => {
    assert.equal(quotable('http://a/b"c\\d'), 'http://a/b%22c%5Cd');
  });

  it('caches the issuer metadata briefly and shares concurrent fetches; an issuer down is asked again only after a pause', async () => {
    let calls = 0;
    let status = 200;
    let now = 0;
    const target: UpstreamTarget = {
      origin: 'http://as.test',
      forward: () => Promise.reject(new Error('unused')),
      upgrade: () => undefined,
      request: async (o: UpstreamCallOptions) => {
        calls++;
        assert.equal(o.path, '/.well-known/oauth-authorization-server');
        const body = new PassThrough();
        body.end(JSON.stringify({ issuer: 'http://as.test', n: calls }));
        return { status, headers: {}, body };
      },
    };
    const cache = new AuthorizationServerMetadata(new URL('http://as.test/.well-known/oauth-authorization-server'), target, () => now);
    const [a, b] = await Promise.all([cache.get(), cache.get()]);
    assert.equal(calls, 1);
    assert.equal(a, b);
    now += METADATA_TTL_MS - 1;
    assert.equal((await cache.get()).n, 1);
    now += 2;
    status = 503;
    // The issuer is down when the metadata goes stale: the last good copy is served, and the issuer is not asked
    // again for every discovery request (each was one upstream call per unauthenticated client request).
    assert.equal((await cache.get()).n, 1, 'stale metadata is served while the issuer fails');
    assert.equal(calls, 2);
    for (let i = 0; i < 5; i++) assert.equal((await cache.get()).n, 1);
    assert.equal(calls, 2, 'no new fetch within the retry pause');
    now += METADATA_RETRY_MS;
    status = 200;
    assert.equal((await cache.get()).n, 3, 'asked again after the pause');

    // Never fetched: the failure is answered again until the pause is over, then the issuer is asked again.
    calls = 0;
    status = 502;
    const fresh = new AuthorizationServerMetadata(new URL('http://as.test/.well-known/oauth-authorization-server'), target, () => now);
    await assert.rejects(fresh.get(), /answered 502/);
    for (let i = 0; i < 5; i++) await assert.rejects(fresh.get(), /answered 502/);
    assert.equal(calls, 1);
    now += METADATA_RETRY_MS;
    status = 200;
    assert.equal((await fresh.get()).n, 2);
  });
});
