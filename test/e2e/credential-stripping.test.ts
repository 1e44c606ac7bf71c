// Credentials never reach the upstream unasked (issue 14 item 2, ADR 0015): every credential header an auth policy
// of the route reads is removed before the request goes upstream, whether the credential was accepted, ignored
// (optional / permissive mode) or of another scheme; `backendAuth.passthrough` alone puts `Authorization` back.
// A recording upstream shows exactly which headers arrived.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { after, before, describe, it } from 'node:test';
import * as jose from 'jose';
import { request } from 'undici';
import apiKey from '../../plugins/policies/api-key/plugin.ts';
import basicAuth from '../../plugins/policies/basic-auth/plugin.ts';
import jwtAuth from '../../plugins/policies/jwt-auth/plugin.ts';
import mcpAuthentication from '../../plugins/policies/mcp-authentication/plugin.ts';
import { fullPresetWith } from '../helpers/preset.ts';
import { startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';
import { testTempDir } from '../helpers/temp-dir.ts';

const PRESET = fullPresetWith(jwtAuth, apiKey, basicAuth, mcpAuthentication);
const KEY = 'sk-strip-3c1f9e';
const OTHER_KEY = 'sk-strip-other-77';
const ISSUER = 'https://strip.issuer.test';
const AUDIENCE = 'strip-api';
const basic = (user: string, password: string): string => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

describe('credential headers an auth policy reads never reach the upstream', () => {
  let gw: RunningGateway;
  let port: number;
  let upstream: TestUpstream;
  let mirror: TestUpstream;
  let dir: string;
  let token: string;

  /** Status of the call, and the headers the upstream received for it (undefined when it got nothing). */
  async function call(path: string, headers: Record<string, string>): Promise<{ status: number; got: Record<string, unknown> | undefined }> {
    const before = upstream.received.length;
    const res = await request(`${gw.url(port)}${path}`, { headers });
    await res.body.text();
    return { status: res.statusCode, got: upstream.received.length > before ? upstream.received.at(-1)!.headers : undefined };
  }

  before(async () => {
    port = await freePort();
    upstream = await startUpstream();
    mirror = await startUpstream();
    dir = testTempDir('switchyard-strip-');
    const { privateKey, publicKey } = await jose.generateKeyPair('ES256', { extractable: true });
    writeFileSync(join(dir, 'jwks.json'), JSON.stringify({ keys: [{ ...(await jose.exportJWK(publicKey)), kid: 'k1', use: 'sig' }] }));
    token = await new jose.SignJWT({ sub: 'alice' })
      .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
      .setIssuer(ISSUER)
      .setAudience(AUDIENCE)
      .setExpirationTime('1h')
      .sign(privateKey);
    writeFileSync(join(dir, 'users.htpasswd'), `bob:{SHA}${createHash('sha1').update('secret').digest('base64')}\n`);
    const jwks = { file: relative(process.cwd(), join(dir, 'jwks.json')) };
    const jwt = { issuer: ISSUER, audiences: [AUDIENCE], jwks };
    const keys = [{ key: KEY }, { key: OTHER_KEY }];
    const route = (name: string, policies: Record<string, unknown>) => ({
      name,
      matches: [{ path: { pathPrefix: `/${name}` } }],
      policies,
      backends: [{ host: `127.0.0.1:${upstream.port}` }],
    });
    gw = await startGateway(
      {
        binds: [
          {
            port,
            listeners: [
              {
                routes: [
                  route('apikey', { apiKey: { keys, mode: 'optional' } }),
                  route('apikey-passthrough', { apiKey: { keys, mode: 'optional' }, backendAuth: { passthrough: {} } }),
                  route('jwt', { jwtAuth: { ...jwt, mode: 'optional' } }),
                  route('jwt-permissive', { jwtAuth: { ...jwt, mode: 'permissive' } }),
                  route('basic', { basicAuth: { htpasswd: { file: relative(process.cwd(), join(dir, 'users.htpasswd')) }, mode: 'optional' } }),
                  route('basic-permissive', { basicAuth: { htpasswd: { file: relative(process.cwd(), join(dir, 'users.htpasswd')) }, mode: 'permissive' } }),
                  route('mcpauth', { mcpAuthentication: { ...jwt, mode: 'optional' } }),
                  // Two policies reading one header: the second still sees it (removal waits for the last of them).
                  route('jwt-then-apikey', { jwtAuth: { ...jwt, mode: 'permissive' }, apiKey: { keys, mode: 'strict' } }),
                  route('open', {}),
                  route('mirrored', { apiKey: { keys, mode: 'optional' }, requestMirror: { backend: { host: `127.0.0.1:${mirror.port}` } } }),
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
    await upstream?.close();
    await mirror?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  describe('apiKey (optional)', () => {
    it('an Authorization header of another scheme (Basic) is removed, not forwarded', async () => {
      const { status, got } = await call('/apikey', { authorization: 'Basic eHl6', 'x-other': 'kept' });
      assert.equal(status, 200);
      assert.equal(got!.authorization, undefined);
      assert.equal(got!['x-other'], 'kept', 'unrelated headers still go upstream');
    });

    it('a valid x-api-key plus a wrong Bearer: accepted, and neither header goes upstream', async () => {
      const { status, got } = await call('/apikey', { 'x-api-key': KEY, authorization: 'Bearer not-a-key' });
      assert.equal(status, 200);
      assert.equal(got!['x-api-key'], undefined);
      assert.equal(got!.authorization, undefined);
    });

    it('both headers valid: neither goes upstream', async () => {
      const { status, got } = await call('/apikey', { 'x-api-key': KEY, authorization: `Bearer ${OTHER_KEY}` });
      assert.equal(status, 200);
      assert.equal(got!['x-api-key'], undefined);
      assert.equal(got!.authorization, undefined);
    });

    it('a request without credentials passes unchanged', async () => {
      const { status, got } = await call('/apikey', { 'x-other': 'kept' });
      assert.equal(status, 200);
      assert.equal(got!['x-other'], 'kept');
    });
  });

  describe('backendAuth.passthrough asks for Authorization', () => {
    it('the client\'s Authorization goes upstream as received; x-api-key does not', async () => {
      const { status, got } = await call('/apikey-passthrough', { 'x-api-key': KEY, authorization: 'Basic dXBzdHJlYW06Y3JlZHM=' });
      assert.equal(status, 200);
      assert.equal(got!.authorization, 'Basic dXBzdHJlYW06Y3JlZHM=');
      assert.equal(got!['x-api-key'], undefined);
    });

    it('an accepted Bearer key is passed through too', async () => {
      const { got } = await call('/apikey-passthrough', { authorization: `Bearer ${KEY}` });
      assert.equal(got!.authorization, `Bearer ${KEY}`);
    });
  });

  describe('jwtAuth', () => {
    it('optional: a Basic credential is removed', async () => {
      const { status, got } = await call('/jwt', { authorization: 'Basic eHl6' });
      assert.equal(status, 200);
      assert.equal(got!.authorization, undefined);
    });

    it('optional: an accepted token is removed (DECIDED 6)', async () => {
      const { status, got } = await call('/jwt', { authorization: `Bearer ${token}` });
      assert.equal(status, 200);
      assert.equal(got!.authorization, undefined);
    });

    it('permissive: an invalid token passes but is removed', async () => {
      const { status, got } = await call('/jwt-permissive', { authorization: 'Bearer garbage' });
      assert.equal(status, 200);
      assert.equal(got!.authorization, undefined);
    });
  });

  describe('basicAuth', () => {
    it('optional: a Bearer credential is removed; an accepted Basic one too', async () => {
      assert.equal((await call('/basic', { authorization: 'Bearer abc' })).got!.authorization, undefined);
      const ok = await call('/basic', { authorization: basic('bob', 'secret') });
      assert.equal(ok.status, 200);
      assert.equal(ok.got!.authorization, undefined);
    });

    it('permissive: a wrong password passes but is removed', async () => {
      const { status, got } = await call('/basic-permissive', { authorization: basic('bob', 'wrong') });
      assert.equal(status, 200);
      assert.equal(got!.authorization, undefined);
    });
  });

  describe('mcpAuthentication', () => {
    it('optional: a Basic credential is removed; an accepted token too', async () => {
      const other = await call('/mcpauth', { authorization: 'Basic eHl6' });
      assert.equal(other.status, 200);
      assert.equal(other.got!.authorization, undefined);
      const ok = await call('/mcpauth', { authorization: `Bearer ${token}` });
      assert.equal(ok.status, 200);
      assert.equal(ok.got!.authorization, undefined);
    });
  });

  it('removal happens after the last auth policy of the route: a permissive jwtAuth leaves the key for apiKey', async () => {
    const { status, got } = await call('/jwt-then-apikey', { authorization: `Bearer ${KEY}` });
    assert.equal(status, 200);
    assert.equal(got!.authorization, undefined);
  });

  it('a mirrored copy carries no credential either', async () => {
    const { status, got } = await call('/mirrored', { 'x-api-key': KEY, authorization: 'Basic eHl6' });
    assert.equal(status, 200);
    assert.equal(got!.authorization, undefined);
    for (let i = 0; i < 100 && mirror.received.length === 0; i++) await new Promise((r) => setTimeout(r, 20));
    const copy = mirror.received.at(-1)!.headers;
    assert.equal(copy.authorization, undefined);
    assert.equal(copy['x-api-key'], undefined);
  });

  it('a route without auth policies forwards Authorization untouched', async () => {
    const { got } = await call('/open', { authorization: 'Bearer for-the-upstream' });
    assert.equal(got!.authorization, 'Bearer for-the-upstream');
  });
});
