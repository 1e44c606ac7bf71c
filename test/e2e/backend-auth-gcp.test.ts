// backendAuth `gcp` with the real google-auth-library against loopback stand-ins that speak Google's protocols:
// the GCE metadata server (`Metadata-Flavor: Google`, `/computeMetadata/v1/…`) and an OAuth token endpoint that
// verifies a service-account key's signed JWT assertion (RFC 7523), with the key generated here.
import assert from 'node:assert/strict';
import { createPublicKey, createVerify, generateKeyPairSync, sign } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { appendFileSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { IncomingMessage, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { request } from 'undici';
import { startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';
import { config, gatewayOptions, withEnv } from './backend-auth-support.ts';
import { testTempDir } from '../helpers/temp-dir.ts';

const b64url = (v: unknown): string => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v)).toString('base64url');
const decodeJwt = (jwt: string): { header: Record<string, unknown>; claims: Record<string, unknown> } => {
  const [h, c] = jwt.split('.');
  return { header: JSON.parse(Buffer.from(h!, 'base64url').toString()), claims: JSON.parse(Buffer.from(c!, 'base64url').toString()) };
};

/** A Google-style RS256 identity token signed by `key`. */
function idToken(key: KeyObject, audience: string, email: string): string {
  const now = Math.floor(Date.now() / 1000);
  const head = `${b64url({ alg: 'RS256', kid: 'test-kid', typ: 'JWT' })}.${b64url({ iss: 'https://accounts.google.com', aud: audience, azp: email, email, sub: '1234567890', iat: now, exp: now + 3600 })}`;
  return `${head}.${sign('sha256', Buffer.from(head), key).toString('base64url')}`;
}

async function listen(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

async function close(server: Server): Promise<void> {
  await new Promise<void>((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    let s = '';
    req.on('data', (c: Buffer) => (s += c));
    req.on('end', () => resolve(s));
  });
}

interface MetadataStandIn {
  port: number;
  /** Requests per path (without query). */
  hits: Map<string, number>;
  audiences: string[];
  scopes: string[];
  failTokens: boolean;
  refusedWithoutFlavor: number;
  server: Server;
}

/** The GCE metadata server's token and identity endpoints, as documented (compute/docs/access/authenticate-workloads). */
async function startMetadata(signer: KeyObject): Promise<MetadataStandIn> {
  const state: MetadataStandIn = { port: 0, hits: new Map(), audiences: [], scopes: [], failTokens: false, refusedWithoutFlavor: 0, server: undefined as never };
  let n = 0;
  state.server = createServer((req, res) => {
    const url = new URL(req.url!, 'http://metadata.google.internal');
    state.hits.set(url.pathname, (state.hits.get(url.pathname) ?? 0) + 1);
    const reply = (status: number, body: string, type = 'application/text'): void => {
      res.writeHead(status, { 'metadata-flavor': 'Google', 'content-type': type });
      res.end(body);
    };
    // The real server refuses requests without the header (and proxied ones), so SSRF cannot reach it.
    if (req.headers['metadata-flavor'] !== 'Google' || req.headers['x-forwarded-for']) {
      state.refusedWithoutFlavor++;
      return reply(403, 'Missing Metadata-Flavor:Google header.');
    }
    switch (url.pathname) {
      case '/computeMetadata/v1/instance':
      case '/computeMetadata/v1/instance/':
        return reply(200, 'attributes/\nservice-accounts/\n');
      case '/computeMetadata/v1/universe/universe-domain':
        return reply(200, 'googleapis.com');
      case '/computeMetadata/v1/project/project-id':
        return reply(200, 'switchyard-test');
      case '/computeMetadata/v1/instance/service-accounts/default/email':
        return reply(200, 'gateway@switchyard-test.iam.gserviceaccount.com');
      case '/computeMetadata/v1/instance/service-accounts/default/token':
        if (state.failTokens) return reply(500, 'internal error');
        state.scopes.push(url.searchParams.get('scopes') ?? '');
        return reply(200, JSON.stringify({ access_token: `ya29.metadata-${++n}`, expires_in: 3599, token_type: 'Bearer' }), 'application/json');
      case '/computeMetadata/v1/instance/service-accounts/default/identity': {
        if (state.failTokens) return reply(500, 'internal error');
        const audience = url.searchParams.get('audience');
        if (!audience) return reply(400, 'non-empty audience parameter required');
        state.audiences.push(audience);
        return reply(200, idToken(signer, audience, 'gateway@switchyard-test.iam.gserviceaccount.com'));
      }
      default:
        return reply(404, 'not found');
    }
  });
  state.port = await listen(state.server);
  return state;
}

describe('backendAuth: gcp from the metadata server', () => {
  let gw: RunningGateway;
  let port: number;
  let upstream: TestUpstream;
  let metadata: MetadataStandIn;
  let env: { restore(): void };
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });

  before(async () => {
    metadata = await startMetadata(privateKey);
    env = withEnv({
      GCE_METADATA_HOST: `127.0.0.1:${metadata.port}`,
      GCE_METADATA_IP: undefined,
      METADATA_SERVER_DETECTION: undefined,
      GOOGLE_APPLICATION_CREDENTIALS: undefined,
      // No gcloud ADC file from the machine running the tests.
      CLOUDSDK_CONFIG: testTempDir('switchyard-gcloud-'),
      // A known project: the library does not run `gcloud` (2-5 s where the Cloud SDK is installed) to find one.
      GOOGLE_CLOUD_PROJECT: 'test-project',
    });
    port = await freePort();
    upstream = await startUpstream();
    gw = await startGateway(
      config(port, upstream.port, [
        { name: 'access', policies: { backendAuth: { gcp: {} } } },
        { name: 'access-explicit', policies: { backendAuth: { gcp: { type: 'accessToken' } } } },
        { name: 'id', policies: { backendAuth: { gcp: { type: 'idToken', audience: 'https://my-service-abc123-uc.a.run.app' } } } },
        { name: 'id-default', policies: { backendAuth: { cloudAuthA: { type: 'identityToken' } } } },
        { name: 'id-failing', policies: { backendAuth: { gcp: { type: 'idToken', audience: 'https://never-fetched.example' } } } },
      ]),
      gatewayOptions,
    );
  });
  after(async () => {
    await gw?.stop();
    await upstream?.close();
    await close(metadata.server);
    env.restore();
  });

  const call = async (path: string): Promise<{ status: number; authorization: unknown }> => {
    const before = upstream.received.length;
    const res = await request(`${gw.url(port)}${path}`, { headers: { authorization: 'Bearer from-the-client' } });
    await res.body.text();
    return { status: res.statusCode, authorization: upstream.received.length > before ? upstream.received.at(-1)!.headers.authorization : undefined };
  };

  it('nothing is fetched at load', () => {
    assert.equal(metadata.hits.get('/computeMetadata/v1/instance/service-accounts/default/token'), undefined);
  });

  it('sends the access token; several requests cost one metadata token call', async () => {
    const results = await Promise.all([call('/access'), call('/access'), call('/access')]);
    for (const r of results) {
      assert.equal(r.status, 200);
      assert.match(String(r.authorization), /^Bearer ya29\.metadata-\d+$/);
    }
    await call('/access');
    assert.equal(new Set(results.map((r) => r.authorization)).size, 1);
    assert.equal(metadata.hits.get('/computeMetadata/v1/instance/service-accounts/default/token'), 1);
    assert.match(metadata.scopes[0]!, /cloud-platform/);
    assert.equal(metadata.refusedWithoutFlavor, 0, 'every metadata request carried Metadata-Flavor: Google');
  });

  it('routes share the process credentials and tokens (ADC is process-wide)', async () => {
    const first = await call('/access');
    const r = await call('/access-explicit');
    assert.equal(r.authorization, first.authorization);
    assert.equal(metadata.hits.get('/computeMetadata/v1/instance/service-accounts/default/token'), 1);
  });

  it('a config reload keeps the cached token', async () => {
    const before = await call('/access');
    appendFileSync(gw.file, '\n# reloaded\n');
    assert.equal(await gw.gateway.reload(), true);
    const after = await call('/access');
    assert.equal(after.authorization, before.authorization);
    assert.equal(metadata.hits.get('/computeMetadata/v1/instance/service-accounts/default/token'), 1);
  });

  it('sends an identity token for the configured audience, cached', async () => {
    const first = await call('/id');
    const second = await call('/id');
    assert.equal(first.status, 200);
    const jwt = String(first.authorization).replace(/^Bearer /, '');
    assert.equal(decodeJwt(jwt).claims.aud, 'https://my-service-abc123-uc.a.run.app');
    assert.equal(second.authorization, first.authorization);
    assert.deepEqual(metadata.audiences, ['https://my-service-abc123-uc.a.run.app']);
  });

  it('`identityToken` and `cloudAuthA` are aliases; the audience defaults to https://<backend host>', async () => {
    const r = await call('/id-default');
    assert.equal(decodeJwt(String(r.authorization).replace(/^Bearer /, '')).claims.aud, 'https://127.0.0.1');
    assert.equal(metadata.audiences.at(-1), 'https://127.0.0.1');
  });

  it('a metadata server failure is a 500 JSON `backend authentication failed`, and nothing goes upstream', async () => {
    metadata.failTokens = true;
    try {
      const before = upstream.received.length;
      const res = await request(`${gw.url(port)}/id-failing`);
      assert.equal(res.statusCode, 500);
      assert.equal(res.headers['content-type'], 'application/json');
      const body = (await res.body.json()) as { error: { type: string; message: string } };
      assert.equal(body.error.type, 'backend_auth_failed');
      assert.match(body.error.message, /^backend authentication failed: /);
      assert.equal(upstream.received.length, before);
      // Cached tokens keep working while the metadata server is down.
      assert.equal((await call('/access')).status, 200);
    } finally {
      metadata.failTokens = false;
    }
  });
});

interface TokenEndpoint {
  port: number;
  grants: { claims: Record<string, unknown> }[];
  rejectAll: boolean;
  server: Server;
}

/** Google's OAuth token endpoint for service accounts: a JWT-bearer grant (RFC 7523) signed with the account's key. */
async function startTokenEndpoint(publicKey: KeyObject, email: string, signer: KeyObject): Promise<TokenEndpoint> {
  const state: TokenEndpoint = { port: 0, grants: [], rejectAll: false, server: undefined as never };
  let n = 0;
  state.server = createServer(async (req, res) => {
    const json = (status: number, value: unknown): void => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(value));
    };
    const form = new URLSearchParams(await readBody(req));
    if (req.method !== 'POST' || req.url !== '/token') return json(404, { error: 'not_found' });
    if (form.get('grant_type') !== 'urn:ietf:params:oauth:grant-type:jwt-bearer') return json(400, { error: 'unsupported_grant_type' });
    const assertion = form.get('assertion') ?? '';
    const [h, c, s] = assertion.split('.');
    const valid = !state.rejectAll && createVerify('RSA-SHA256').update(`${h}.${c}`).verify(publicKey, Buffer.from(s ?? '', 'base64url'));
    if (!valid) return json(400, { error: 'invalid_grant', error_description: 'Invalid JWT Signature.' });
    const { claims } = decodeJwt(assertion);
    if (claims.iss !== email || (claims.exp as number) * 1000 < Date.now()) return json(400, { error: 'invalid_grant', error_description: 'Invalid JWT.' });
    state.grants.push({ claims });
    if (typeof claims.target_audience === 'string') return json(200, { id_token: idToken(signer, claims.target_audience, email) });
    return json(200, { access_token: `ya29.sa-${++n}`, expires_in: 3599, token_type: 'Bearer' });
  });
  state.port = await listen(state.server);
  return state;
}

describe('backendAuth: gcp from a service-account key file', () => {
  let gw: RunningGateway;
  let port: number;
  let upstream: TestUpstream;
  let tokens: TokenEndpoint;
  let env: { restore(): void };
  const email = 'gateway@switchyard-test.iam.gserviceaccount.com';
  const account = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const google = generateKeyPairSync('rsa', { modulusLength: 2048 });

  before(async () => {
    tokens = await startTokenEndpoint(createPublicKey(account.privateKey), email, google.privateKey);
    const dir = testTempDir('switchyard-gcp-sa-');
    const keyFile = join(dir, 'service-account.json');
    // The shape of a key downloaded from the console, pointing its token_uri at the stand-in.
    writeFileSync(
      keyFile,
      JSON.stringify({
        type: 'service_account',
        project_id: 'switchyard-test',
        private_key_id: 'a1b2c3d4e5f6',
        private_key: account.privateKey.export({ type: 'pkcs8', format: 'pem' }),
        client_email: email,
        client_id: '123456789012345678901',
        auth_uri: 'https://accounts.google.com/o/oauth2/auth',
        token_uri: `http://127.0.0.1:${tokens.port}/token`,
        auth_provider_x509_cert_url: 'https://www.googleapis.com/oauth2/v1/certs',
        client_x509_cert_url: `https://www.googleapis.com/robot/v1/metadata/x509/${encodeURIComponent(email)}`,
        universe_domain: 'googleapis.com',
      }),
    );
    env = withEnv({
      GOOGLE_APPLICATION_CREDENTIALS: keyFile,
      // No metadata server: a fall-through to it would hang or fail, not pass.
      GCE_METADATA_HOST: '127.0.0.1:9',
      CLOUDSDK_CONFIG: testTempDir('switchyard-gcloud-'),
    });
    port = await freePort();
    upstream = await startUpstream();
    gw = await startGateway(
      config(port, upstream.port, [
        { name: 'access', policies: { backendAuth: { gcp: { type: 'accessToken' } } } },
        { name: 'id', policies: { backendAuth: { gcp: { type: 'idToken', audience: 'https://svc.example.com' } } } },
        { name: 'rejected', policies: { backendAuth: { gcp: { type: 'idToken', audience: 'https://rejected.example' } } } },
      ]),
      gatewayOptions,
    );
  });
  after(async () => {
    await gw?.stop();
    await upstream?.close();
    await close(tokens.server);
    env.restore();
  });

  const call = async (path: string): Promise<string | undefined> => {
    const res = await request(`${gw.url(port)}${path}`);
    assert.equal(res.statusCode, 200, await res.body.text());
    return upstream.received.at(-1)!.headers.authorization as string | undefined;
  };

  it('exchanges a signed assertion for an access token, once for several requests', async () => {
    const auths = await Promise.all([call('/access'), call('/access'), call('/access')]);
    assert.equal(new Set(auths).size, 1);
    assert.match(auths[0]!, /^Bearer ya29\.sa-\d+$/);
    assert.equal(tokens.grants.length, 1);
    const claims = tokens.grants[0]!.claims;
    assert.equal(claims.iss, email);
    assert.equal(claims.aud, 'https://oauth2.googleapis.com/token');
    assert.match(String(claims.scope), /https:\/\/www\.googleapis\.com\/auth\/cloud-platform/);
  });

  it('mints an identity token with target_audience, cached', async () => {
    const first = await call('/id');
    const second = await call('/id');
    assert.equal(first, second);
    assert.equal(decodeJwt(first!.replace(/^Bearer /, '')).claims.aud, 'https://svc.example.com');
    assert.equal(tokens.grants.filter((g) => g.claims.target_audience === 'https://svc.example.com').length, 1);
  });

  it('a refused grant is a 500 JSON `backend authentication failed` naming the OAuth error', async () => {
    tokens.rejectAll = true;
    try {
      const res = await request(`${gw.url(port)}/rejected`);
      assert.equal(res.statusCode, 500);
      const body = (await res.body.json()) as { error: { type: string; message: string } };
      assert.match(body.error.message, /^backend authentication failed: .*invalid_grant/);
    } finally {
      tokens.rejectAll = false;
    }
  });

  it('the private key never reaches the logs', () => {
    const pem = String(account.privateKey.export({ type: 'pkcs8', format: 'pem' }));
    const line = pem.split('\n')[1]!;
    assert.ok(!gw.logs.some((l) => l.includes(line)));
  });
});
