// mcpAuthentication and mcpAuthorization end to end: oidc-provider is the real authorization server, the SDK v1 client
// discovers it through the gateway (401 → protected-resource metadata → AS metadata → token), server-everything over
// stdio is the MCP target, and raw HTTP covers the rejections, the discovery documents and the adapters.
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { ClientCredentialsProvider } from '@modelcontextprotocol/sdk/client/auth-extensions.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import * as jose from 'jose';
import mcpBackend from '../../plugins/backends/mcp/plugin.ts';
import stdio from '../../plugins/mcp-transports/stdio/plugin.ts';
import mcpAuthentication from '../../plugins/policies/mcp-authentication/plugin.ts';
import mcpAuthorization from '../../plugins/policies/mcp-authorization/plugin.ts';
import { fullPresetWith } from '../helpers/preset.ts';
import { rawRequest } from '../e2e/proxy-support.ts';
import { startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { startOidcProvider, TEST_CLIENT } from '../helpers/oidc-provider.ts';
import type { RunningOidcProvider } from '../helpers/oidc-provider.ts';
import { freePort } from '../helpers/ports.ts';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';
import { testTempDir } from '../helpers/temp-dir.ts';

const PRESET = fullPresetWith(mcpBackend, stdio, mcpAuthentication, mcpAuthorization);
const EVERYTHING = join(dirname(fileURLToPath(import.meta.url)), '../../node_modules/@modelcontextprotocol/server-everything/dist/index.js');
const everythingStdio = () => ({ name: 'everything', stdio: { cmd: process.execPath, args: [EVERYTHING, 'stdio'] } });
const INIT = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
});
/** The JSON-RPC messages of a JSON or SSE answer. */
function messagesOf(text: string): unknown[] {
  const trimmed = text.trim();
  if (trimmed.startsWith('{') || trimmed.startsWith('[')) {
    const v = JSON.parse(trimmed) as unknown;
    return Array.isArray(v) ? v : [v];
  }
  return text
    .split('\n')
    .filter((l) => l.startsWith('data: '))
    .map((l) => JSON.parse(l.slice(6)) as unknown);
}
const PR = '/.well-known/oauth-protected-resource';
const AS = '/.well-known/oauth-authorization-server';
const LOCAL_ISS = 'https://local.issuer.test';
const CORS_GET = { 'access-control-allow-origin': '*', 'access-control-allow-methods': 'GET, OPTIONS', 'access-control-allow-headers': 'content-type' };

const b64 = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url');
const now = (): number => Math.floor(Date.now() / 1000);

interface Answer {
  status: number;
  headers: Headers;
  text: string;
}

describe('mcpAuthentication + mcpAuthorization with a real authorization server', () => {
  let gw: RunningGateway;
  let base: string;
  let resource: string;
  let as: RunningOidcProvider;
  let asOther: RunningOidcProvider;
  let upstream: TestUpstream;
  let signLocal: (claims: jose.JWTPayload, kid?: string) => Promise<string>;
  let signStranger: (claims: jose.JWTPayload, kid: string) => Promise<string>;

  /** The three paths a protected MCP route must match: the endpoint and its two discovery documents. */
  const matches = (path: string) => [{ path: { pathPrefix: path } }, { path: { pathPrefix: `${PR}${path}` } }, { path: { pathPrefix: `${AS}${path}` } }];

  async function call(path: string, init: { method?: string; token?: string; headers?: Record<string, string>; body?: string } = {}): Promise<Answer> {
    const headers: Record<string, string> = { ...init.headers };
    if (init.token !== undefined) headers.authorization = `Bearer ${init.token}`;
    const res = await fetch(`${base}${path}`, { method: init.method ?? 'GET', headers, body: init.body });
    return { status: res.status, headers: res.headers, text: await res.text() };
  }

  /** An MCP initialize POST, the first thing a client sends. */
  const initialize = (path: string, token?: string, headers: Record<string, string> = {}) =>
    call(path, { method: 'POST', token, body: INIT, headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers } });

  /** A refused request: a missing token gets the bare RFC 9728 challenge, a refused one adds RFC 6750's `invalid_token`. */
  function assertUnauthorized(a: Answer, metadataUrl: string, message: RegExp): void {
    assert.equal(a.status, 401, a.text);
    const missing = message.source.includes('no bearer token');
    assert.equal(a.headers.get('www-authenticate'), `Bearer resource_metadata="${metadataUrl}"${missing ? '' : ', error="invalid_token"'}`);
    assert.equal(a.headers.get('content-type'), 'application/json');
    const body = JSON.parse(a.text) as { error: { type: string; message: string } };
    assert.deepEqual(Object.keys(body), ['error']);
    assert.equal(body.error.type, 'unauthorized');
    assert.match(body.error.message, message);
  }
  const assertRejected = (a: Answer, message: RegExp) => assertUnauthorized(a, `${base}${PR}/mcp`, message);

  /** An SDK v1 client on `path` that sends a fixed bearer token. */
  async function clientWithToken(path: string, token: string): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
    const client = new Client({ name: 'mcp-auth-test', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL(`${base}${path}`), { requestInit: { headers: { authorization: `Bearer ${token}` } } });
    await client.connect(transport);
    return { client, transport };
  }
  async function close(c: { client: Client; transport: StreamableHTTPClientTransport }): Promise<void> {
    await c.transport.terminateSession().catch(() => undefined);
    await c.client.close();
  }

  before(async () => {
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    resource = `${base}/mcp`;
    const closedPort = await freePort();
    [as, asOther, upstream] = await Promise.all([
      startOidcProvider({ defaultResource: resource, registration: true }),
      startOidcProvider({ defaultResource: resource }),
      startUpstream(),
    ]);

    const dir = testTempDir('switchyard-mcp-auth-');
    const local = await jose.generateKeyPair('RS256', { extractable: true });
    const localJwk = { ...(await jose.exportJWK(local.publicKey)), kid: 'local-1', alg: 'RS256', use: 'sig' };
    writeFileSync(join(dir, 'jwks.json'), JSON.stringify({ keys: [localJwk] }));
    signLocal = (claims, kid = 'local-1') =>
      new jose.SignJWT(claims).setProtectedHeader({ alg: 'RS256', typ: 'at+jwt', kid }).sign(local.privateKey);
    const stranger = await jose.generateKeyPair('RS256');
    signStranger = (claims, kid) => new jose.SignJWT(claims).setProtectedHeader({ alg: 'RS256', typ: 'at+jwt', kid }).sign(stranger.privateKey);

    const metadata = (path: string, extra: Record<string, unknown> = {}) => ({ resource: `${base}${path}`, ...extra });
    gw = await startGateway(
      {
        // The X-Forwarded-Proto test stands for a proxy in front of the gateway (ADR 0014).
        config: { logging: { format: 'json', level: 'info' }, drainTimeout: '500ms', trustedProxies: ['127.0.0.1/32'] },
        binds: [
          {
            port,
            listeners: [
              {
                routes: [
                  {
                    name: 'strict',
                    matches: matches('/mcp'),
                    policies: {
                      mcpAuthentication: {
                        issuer: as.issuer,
                        audiences: [resource],
                        jwks: { url: as.jwksUri },
                        mode: 'strict',
                        resourceMetadata: metadata('/mcp', {
                          scopesSupported: ['mcp:tools'],
                          bearerMethodsSupported: ['header'],
                          resourceDocumentation: 'https://docs.example.test/mcp',
                          resourcePolicyUri: 'https://docs.example.test/policy',
                        }),
                      },
                      mcpAuthorization: {
                        rules: [
                          'mcp.tool.target == "everything" && mcp.tool.name == "echo"',
                          'mcp.tool.name == "get-sum" && jwt.scope.contains("mcp:admin")',
                          'jwt.client_id == "mcp-test-client" && mcp.prompt.name == "simple-prompt"',
                          // A caller holding only the admin scope (no mcp:tools) sees nothing at all.
                          { deny: 'jwt.scope == "mcp:admin"' },
                        ],
                      },
                    },
                    backends: [{ mcp: { targets: [everythingStdio()] } }],
                  },
                  {
                    name: 'auth0',
                    matches: matches('/a0'),
                    policies: {
                      mcpAuthentication: {
                        issuer: as.issuer,
                        audiences: [`${base}/a0`],
                        jwks: { url: as.jwksUri },
                        mode: 'strict',
                        provider: { auth0: {} },
                        resourceMetadata: metadata('/a0', { scopesSupported: ['mcp:tools'] }),
                      },
                    },
                    backends: [{ mcp: { targets: [everythingStdio()] } }],
                  },
                  {
                    name: 'keycloak',
                    matches: matches('/kc'),
                    policies: {
                      mcpAuthentication: {
                        issuer: as.issuer,
                        audiences: [`${base}/kc`],
                        jwks: { url: as.jwksUri },
                        mode: 'strict',
                        // The neutral spelling of NAMES.md (identityProviderB = keycloak).
                        provider: { identityProviderB: {} },
                        resourceMetadata: metadata('/kc'),
                      },
                      directResponse: { status: 200, body: 'kc ok' },
                    },
                  },
                  {
                    name: 'optional',
                    matches: [{ path: { pathPrefix: '/opt' } }],
                    policies: {
                      mcpAuthentication: { issuer: as.issuer, audiences: [resource], jwks: { url: as.jwksUri } },
                      transformations: { request: { set: { 'x-sub': 'jwt.sub', 'x-scope': 'jwt.scope' } } },
                    },
                    backends: [{ host: `127.0.0.1:${upstream.port}` }],
                  },
                  {
                    name: 'local',
                    matches: [{ path: { pathPrefix: '/local' } }],
                    policies: {
                      mcpAuthentication: { issuer: LOCAL_ISS, audiences: ['local-api'], jwks: { file: join(dir, 'jwks.json') }, mode: 'strict' },
                      directResponse: { status: 200, body: 'local ok' },
                    },
                  },
                  {
                    name: 'down',
                    matches: matches('/down'),
                    policies: {
                      mcpAuthentication: {
                        issuer: `http://127.0.0.1:${closedPort}`,
                        audiences: ['x'],
                        jwks: { file: join(dir, 'jwks.json') },
                        mode: 'strict',
                        provider: { identityProviderA: {} },
                        resourceMetadata: metadata('/down'),
                      },
                      directResponse: { status: 200, body: 'down ok' },
                    },
                  },
                ],
              },
            ],
          },
        ],
      },
      { preset: PRESET },
    );
  });

  after(async () => {
    await gw?.stop();
    await Promise.all([as?.close(), asOther?.close(), upstream?.close()]);
  });

  describe('discovery through the gateway', () => {
    it('the SDK client-credentials provider discovers the AS, gets a token for the resource and lists tools', async () => {
      const authProvider = new ClientCredentialsProvider({
        clientId: TEST_CLIENT.id,
        clientSecret: TEST_CLIENT.secret,
        scope: 'mcp:tools',
        expectedIssuer: as.issuer,
      });
      const transport = new StreamableHTTPClientTransport(new URL(resource), { authProvider });
      const client = new Client({ name: 'mcp-auth-test', version: '1.0.0' });
      await client.connect(transport);
      try {
        const token = authProvider.tokens()!.access_token;
        const claims = jose.decodeJwt(token);
        assert.equal(claims.aud, resource, 'the token was requested for the resource of the protected-resource metadata');
        assert.equal(claims.iss, as.issuer);
        assert.equal(claims.scope, 'mcp:tools');
        // mcpAuthorization over the token's claims: only echo (get-sum needs mcp:admin).
        assert.deepEqual((await client.listTools()).tools.map((t) => t.name), ['echo']);
        const echo = await client.callTool({ name: 'echo', arguments: { message: 'through oauth' } });
        assert.deepEqual(echo.content, [{ type: 'text', text: 'Echo: through oauth' }]);
      } finally {
        await transport.terminateSession().catch(() => undefined);
        await client.close();
      }
    });

    it('a client holding a refused token (error="invalid_token") runs the flow again and gets a working one', async () => {
      const authProvider = new ClientCredentialsProvider({ clientId: TEST_CLIENT.id, clientSecret: TEST_CLIENT.secret, scope: 'mcp:tools', expectedIssuer: as.issuer });
      const stale = await signStranger({ iss: as.issuer, aud: resource, sub: 'x', exp: now() + 300 }, as.kid);
      authProvider.saveTokens({ access_token: stale, token_type: 'Bearer' });
      const refused = await initialize('/mcp', stale);
      assert.match(refused.headers.get('www-authenticate') ?? '', /, error="invalid_token"$/);
      const transport = new StreamableHTTPClientTransport(new URL(resource), { authProvider });
      const client = new Client({ name: 'mcp-auth-test', version: '1.0.0' });
      await client.connect(transport);
      try {
        assert.notEqual(authProvider.tokens()!.access_token, stale, 'a new token');
        assert.deepEqual((await client.listTools()).tools.map((t) => t.name), ['echo']);
      } finally {
        await transport.terminateSession().catch(() => undefined);
        await client.close();
      }
    });

    it('with the auth0 adapter the client asks the gateway for AS metadata and still gets a working token', async () => {
      const a0 = `${base}/a0`;
      const prm = await call(`${PR}/a0`);
      assert.deepEqual(JSON.parse(prm.text).authorization_servers, [a0], 'the gateway names itself as the authorization server');
      const authProvider = new ClientCredentialsProvider({ clientId: TEST_CLIENT.id, clientSecret: TEST_CLIENT.secret, scope: 'mcp:tools', expectedIssuer: a0 });
      const transport = new StreamableHTTPClientTransport(new URL(a0), { authProvider });
      const client = new Client({ name: 'mcp-auth-test', version: '1.0.0' });
      await client.connect(transport);
      try {
        assert.equal(jose.decodeJwt(authProvider.tokens()!.access_token).aud, a0);
        const tools = (await client.listTools()).tools.map((t) => t.name);
        assert.ok(tools.includes('echo') && tools.includes('get-sum'), 'no mcpAuthorization on this route');
      } finally {
        await transport.terminateSession().catch(() => undefined);
        await client.close();
      }
    });

    it('serves RFC 9728 protected-resource metadata exactly, with CORS, and answers its preflight', async () => {
      const a = await call(`${PR}/mcp`);
      assert.equal(a.status, 200);
      assert.equal(a.headers.get('content-type'), 'application/json');
      for (const [k, v] of Object.entries(CORS_GET)) assert.equal(a.headers.get(k), v, k);
      assert.deepEqual(JSON.parse(a.text), {
        resource,
        authorization_servers: [as.issuer],
        mcp_protocol_version: '2025-06-18',
        resource_type: 'mcp-server',
        scopes_supported: ['mcp:tools'],
        bearer_methods_supported: ['header'],
        resource_documentation: 'https://docs.example.test/mcp',
        resource_policy_uri: 'https://docs.example.test/policy',
      });
      // The configured resource wins over the URL the document was asked at.
      assert.equal(JSON.parse((await call(`${PR}/mcp/sub`)).text).resource, resource);
      const pre = await call(`${PR}/mcp`, { method: 'OPTIONS', headers: { origin: 'https://app.test', 'access-control-request-method': 'GET' } });
      assert.equal(pre.status, 200);
      for (const [k, v] of Object.entries(CORS_GET)) assert.equal(pre.headers.get(k), v, k);
      assert.equal((await call(`${PR}/mcp`, { method: 'POST', body: '{}' })).status, 405);
    });

    it('discovery paths are read as routing reads them: escapes, `//` and dot segments cannot swap a document for the endpoint', async () => {
      const port = Number(new URL(base).port);
      const raw = (target: string) => rawRequest(port, `GET ${target} HTTP/1.1\nHost: ${base.slice('http://'.length)}\nConnection: close`);
      // Routed as the document: served as the document (it used to be challenged as a call to the endpoint).
      for (const spelling of [`/%2Ewell-known/oauth-protected-resource/mcp`, `//.well-known/oauth-protected-resource/mcp`, `/.well-known/oauth-%70rotected-resource/mcp`]) {
        const doc = await raw(spelling);
        assert.equal(doc.status, 200, `${spelling}: ${doc.body.toString()}`);
        assert.equal(JSON.parse(doc.body.toString()).resource, resource, spelling);
      }
      // Routed as the endpoint: challenged as the endpoint (it used to be answered with the document).
      const call = await raw(`${PR}/../../mcp`);
      assert.equal(call.status, 401, call.body.toString());
      assert.equal(call.headers.find(([n]) => n === 'www-authenticate')?.[1], `Bearer resource_metadata="${base}${PR}/mcp"`);
      // The challenge names the path that was routed, not the client's spelling of it.
      const deeper = await raw('/mcp/a/../deeper');
      assert.equal(deeper.headers.find(([n]) => n === 'www-authenticate')?.[1], `Bearer resource_metadata="${base}${PR}/mcp/deeper"`);
    });

    it('relays the issuer metadata unchanged without an adapter', async () => {
      const direct = await (await fetch(`${as.issuer}${AS}`)).json();
      const a = await call(`${AS}/mcp`);
      assert.equal(a.status, 200);
      for (const [k, v] of Object.entries(CORS_GET)) assert.equal(a.headers.get(k), v, k);
      assert.deepEqual(JSON.parse(a.text), direct);
    });

    it('auth0 adapter: authorization_endpoint gets the first audience', async () => {
      const direct = (await (await fetch(`${as.issuer}${AS}`)).json()) as Record<string, unknown>;
      const served = JSON.parse((await call(`${AS}/a0`)).text) as Record<string, unknown>;
      assert.equal(served.authorization_endpoint, `${direct.authorization_endpoint}?audience=${encodeURIComponent(`${base}/a0`)}`);
      assert.deepEqual({ ...served, authorization_endpoint: direct.authorization_endpoint }, direct, 'nothing else changes');
    });

    it('keycloak adapter: reads openid-configuration, points registration at the gateway, and relays registrations', async () => {
      const direct = (await (await fetch(`${as.issuer}/.well-known/openid-configuration`)).json()) as Record<string, unknown>;
      assert.equal(typeof direct.registration_endpoint, 'string');
      const served = JSON.parse((await call(`${AS}/kc`)).text) as Record<string, unknown>;
      const registration = `${base}${AS}/kc/client-registration`;
      assert.equal(served.registration_endpoint, registration);
      assert.deepEqual({ ...served, registration_endpoint: direct.registration_endpoint }, direct);
      // With an adapter the protected-resource metadata names the gateway.
      assert.deepEqual(JSON.parse((await call(`${PR}/kc`)).text).authorization_servers, [`${base}/kc`]);

      const pre = await call(`${AS}/kc/client-registration`, { method: 'OPTIONS' });
      assert.equal(pre.status, 200);
      assert.equal(pre.headers.get('access-control-allow-methods'), 'POST, OPTIONS');
      const reg = await call(`${AS}/kc/client-registration`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ client_name: 'dcr-test', grant_types: ['client_credentials'], response_types: [], redirect_uris: [], token_endpoint_auth_method: 'client_secret_basic' }),
      });
      assert.equal(reg.status, 201, reg.text);
      assert.equal(reg.headers.get('access-control-allow-origin'), '*');
      const registered = JSON.parse(reg.text) as { client_id: string; client_secret: string };
      assert.ok(registered.client_id && registered.client_secret);
      // The registered client is real: the authorization server issues it a token.
      const token = await fetch(`${as.issuer}/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(`${registered.client_id}:${registered.client_secret}`).toString('base64')}` },
        body: new URLSearchParams({ grant_type: 'client_credentials', resource: `${base}/kc` }).toString(),
      });
      assert.equal(token.status, 200);
      const ok = await call('/kc', { token: ((await token.json()) as { access_token: string }).access_token });
      assert.equal(ok.status, 200, ok.text);
      assert.equal(ok.text, 'kc ok');
    });

    it('an unreachable issuer gives a 500 JSON error on the AS metadata path; the PRM document still works', async () => {
      const a = await call(`${AS}/down`);
      assert.equal(a.status, 500);
      assert.equal(a.headers.get('content-type'), 'application/json');
      assert.equal(a.headers.get('access-control-allow-origin'), '*');
      const body = JSON.parse(a.text) as { error: { type: string; message: string } };
      assert.equal(body.error.type, 'metadata_unavailable');
      assert.equal((await call(`${PR}/down`)).status, 200);
    });
  });

  describe('token validation (strict)', () => {
    it('no token: 401 with the RFC 9728 challenge and the JSON error body', async () => {
      assertRejected(await initialize('/mcp'), /no bearer token found/);
      // A token in another scheme is no bearer token either.
      assertRejected(await initialize('/mcp', undefined, { authorization: 'Basic YTpi' }), /no bearer token found/);
      // The challenge names the request path under the resource's origin.
      assertUnauthorized(await call('/mcp/deeper?x=1'), `${base}${PR}/mcp/deeper`, /no bearer token/);
    });

    it('wrong audience: a real token issued for another resource', async () => {
      assertRejected(await initialize('/mcp', await as.token({ resource: 'http://127.0.0.1:1/other' })), /audience/);
    });

    it('wrong issuer: a real token of another authorization server, and a trusted key naming another issuer', async () => {
      // The other AS signs with its own key under the same `kid`: refused (signature) before `iss` is compared.
      assertRejected(await initialize('/mcp', await asOther.token({ resource })), /signature|issuer/);
      const wrongIss = await signLocal({ iss: 'https://evil.test', aud: 'local-api', exp: now() + 300 });
      assertUnauthorized(await call('/local', { token: wrongIss }), `${base}${PR}/local`, /issuer/);
    });

    it('unsigned (`alg: none`) and unknown-key tokens are refused', async () => {
      const claims = { iss: as.issuer, aud: resource, sub: 'x', exp: now() + 300, scope: 'mcp:tools mcp:admin' };
      assertRejected(await initialize('/mcp', `${b64({ alg: 'none', typ: 'at+jwt', kid: 'test-key-1' })}.${b64(claims)}.`), /alg: none|unsigned/);
      assertRejected(await initialize('/mcp', await signStranger(claims, 'not-a-published-key')), /unknown key/);
      // A known kid, but signed by someone else's key.
      assertRejected(await initialize('/mcp', await signStranger(claims, as.kid)), /signature/);
      assertRejected(await initialize('/mcp', 'not.a.jwt'), /authentication failure/);
    });

    // A real expired token of the authorization server: test/mcp/mcp-auth-expiry.test.ts (it has to wait ~30 s).
    it('expired tokens are refused (crafted, past the clock skew)', async () => {
      const expired = await signLocal({ iss: LOCAL_ISS, aud: 'local-api', exp: now() - 3600 });
      assertUnauthorized(await call('/local', { token: expired }), `${base}${PR}/local`, /expired/);
      assert.equal((await call('/local', { token: await signLocal({ iss: LOCAL_ISS, aud: 'local-api', exp: now() + 300 }) })).text, 'local ok');
    });

    it('an absolute-form request target (RFC 9112 3.2.2) gets the challenge and the discovery documents of its path', async () => {
      const port = Number(new URL(base).port);
      const hostport = base.slice('http://'.length);
      const challenge = await rawRequest(port, `GET ${base}/mcp/deeper?x=1 HTTP/1.1\nHost: ${hostport}\nConnection: close`);
      assert.equal(challenge.status, 401);
      assert.equal(challenge.headers.find(([n]) => n === 'www-authenticate')?.[1], `Bearer resource_metadata="${base}${PR}/mcp/deeper"`);
      const doc = await rawRequest(port, `GET ${base}${PR}/mcp HTTP/1.1\nHost: ${hostport}\nConnection: close`);
      assert.equal(doc.status, 200, doc.body.toString());
      assert.equal(JSON.parse(doc.body.toString()).resource, resource);
    });

    it('without resourceMetadata the challenge uses the request origin, honouring a trusted proxy\'s X-Forwarded-Proto', async () => {
      const a = await call('/local/x', { headers: { 'x-forwarded-proto': 'https' } });
      assertUnauthorized(a, `https://${base.slice('http://'.length)}${PR}/local/x`, /no bearer token/);
      // Not served here: the local route has no resourceMetadata, so the well-known path is not even routed to it.
    });
  });

  describe('optional mode', () => {
    it('logs a warning at load suggesting `mode: strict`', () => {
      assert.ok(gw.logs.some((l) => l.includes('mode: strict') && l.includes('optional')), 'the load warning');
    });

    it('passes without a token, publishes claims and strips the header with one, rejects an invalid one', async () => {
      const none = await call('/opt/a');
      assert.equal(none.status, 200, none.text);
      let seen = upstream.received.at(-1)!;
      assert.equal(seen.headers['x-sub'], undefined);

      const token = await as.token({ resource, scope: 'mcp:tools mcp:admin' });
      const ok = await call('/opt/b', { token });
      assert.equal(ok.status, 200, ok.text);
      seen = upstream.received.at(-1)!;
      assert.equal(seen.headers['x-sub'], TEST_CLIENT.id, 'jwt.sub in CEL');
      assert.equal(seen.headers['x-scope'], 'mcp:tools mcp:admin');
      assert.equal(seen.headers.authorization, undefined, 'DECIDED 6: the accepted token is not forwarded');

      const count = upstream.received.length;
      const bad = await call('/opt/c', { token: `${token.slice(0, -4)}AAAA` });
      assert.equal(bad.status, 401, 'DECIDED 4: an invalid token is rejected in optional mode too');
      assert.equal(bad.headers.get('www-authenticate'), `Bearer resource_metadata="${base}${PR}/opt/c", error="invalid_token"`);
      assert.equal(upstream.received.length, count);
    });
  });

  describe('mcpAuthorization', () => {
    it('hides tools, prompts and resources by tool name, scope and client_id', async () => {
      const plain = await clientWithToken('/mcp', await as.token({ resource, scope: 'mcp:tools' }));
      const admin = await clientWithToken('/mcp', await as.token({ resource, scope: 'mcp:tools mcp:admin' }));
      try {
        assert.deepEqual((await plain.client.listTools()).tools.map((t) => t.name), ['echo']);
        assert.deepEqual((await admin.client.listTools()).tools.map((t) => t.name).sort(), ['echo', 'get-sum']);
        // The client_id rule allows one prompt; tool-only rules error on prompts and resources (false), hiding them.
        assert.deepEqual((await plain.client.listPrompts()).prompts.map((p) => p.name), ['simple-prompt']);
        assert.deepEqual((await plain.client.listResources()).resources, []);
        assert.deepEqual((await plain.client.listResourceTemplates()).resourceTemplates, []);
        const sum = await admin.client.callTool({ name: 'get-sum', arguments: { a: 2, b: 40 } });
        assert.match(JSON.stringify(sum.content), /42/);
      } finally {
        await close(plain);
        await close(admin);
      }
    });

    it('a hidden tool, prompt or resource cannot be called: JSON-RPC -32602', async () => {
      const token = await as.token({ resource, scope: 'mcp:tools' });
      const plain = await clientWithToken('/mcp', token);
      try {
        await assert.rejects(plain.client.callTool({ name: 'get-sum', arguments: { a: 1, b: 2 } }), /-32602.*Unknown tool: get-sum/);
        await assert.rejects(plain.client.getPrompt({ name: 'args-prompt', arguments: { city: 'x' } }), /-32602.*Unknown prompt: args-prompt/);
        await assert.rejects(plain.client.readResource({ uri: 'demo://resource/static/document/architecture.md' }), /-32602.*Unknown resource/);
      } finally {
        await close(plain);
      }
      // Over raw HTTP, the JSON-RPC error exactly.
      const init = await initialize('/mcp', token);
      assert.equal(init.status, 200, init.text);
      const session = init.headers.get('mcp-session-id')!;
      const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' };
      await call('/mcp', { method: 'POST', token, headers, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) });
      const denied = await call('/mcp', { method: 'POST', token, headers, body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'get-sum', arguments: { a: 1, b: 2 } } }) });
      assert.deepEqual(messagesOf(denied.text), [{ jsonrpc: '2.0', id: 7, error: { code: -32602, message: 'Unknown tool: get-sum' } }]);
      await call('/mcp', { method: 'DELETE', token, headers });
    });

    it('a deny rule over a claim vetoes items other rules allow', async () => {
      const c = await clientWithToken('/mcp', await as.token({ resource, scope: 'mcp:admin' }));
      try {
        assert.deepEqual((await c.client.listTools()).tools, []);
        assert.deepEqual((await c.client.listPrompts()).prompts, []);
        await assert.rejects(c.client.callTool({ name: 'echo', arguments: { message: 'x' } }), /-32602.*Unknown tool: echo/);
      } finally {
        await close(c);
      }
    });
  });
});
