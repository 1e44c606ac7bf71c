import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { request } from 'undici';
import { defineAttribute, definePolicy } from 'switchyard/sdk';
import type { Plugin } from 'switchyard/sdk';
import authorization from '../../plugins/policies/authorization/plugin.ts';
import { fullPreset } from '../../plugins/presets/full.ts';
import { namedRoutes, startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';
import { testTempDir } from '../helpers/temp-dir.ts';

// A test-only authentication policy: publishes the `testUser` attribute from a header, as jwtAuth publishes `jwt`.
const testUser = defineAttribute<{ name: string; groups: string[] }>('testUser');
const testIdentity = definePolicy<Record<string, never>>({
  key: 'testIdentity',
  description: 'Test only: trusts `x-test-user` / `x-test-groups` and publishes them as `testUser`.',
  schema: { type: 'object', description: 'No settings.', additionalProperties: false },
  attach: ['routePolicies'],
  phase: 'authn',
  celVariables: ['testUser'],
  compile: () => ({
    onRequest(ex) {
      const name = ex.headers['x-test-user'];
      if (typeof name === 'string') ex.set(testUser, { name, groups: String(ex.headers['x-test-groups'] ?? '').split(',').filter(Boolean) });
    },
  }),
});

const JWT_PLUGIN = new URL('../../plugins/policies/jwt-auth/plugin.ts', import.meta.url);
const jwtAuth: Plugin | undefined = existsSync(JWT_PLUGIN) ? ((await import(JWT_PLUGIN.href)) as { default: Plugin }).default : undefined;

function preset(...extra: (Plugin | undefined)[]): Plugin[] {
  const base = fullPreset as readonly Plugin[];
  return [...base, ...extra.filter((p): p is Plugin => p !== undefined && !base.some((b) => b.key === p.key))];
}

describe('authorization', () => {
  let gw: RunningGateway;
  let port: number;
  let upstream: TestUpstream;
  let signToken: (claims: Record<string, unknown>) => Promise<string>;
  const ISSUER = 'https://issuer.test';

  const route = (name: string, policies: Record<string, unknown>) => namedRoutes([{ name, policies }], () => ({ host: `127.0.0.1:${upstream.port}` }))[0]!;

  before(async () => {
    port = await freePort();
    upstream = await startUpstream();
    const { publicKey, privateKey } = await generateKeyPair('RS256');
    const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' };
    const dir = testTempDir('switchyard-authz-');
    const jwksFile = join(dir, 'jwks.json');
    writeFileSync(jwksFile, JSON.stringify({ keys: [jwk] }));
    signToken = (claims) =>
      new SignJWT(claims).setProtectedHeader({ alg: 'RS256', kid: 'k1' }).setIssuer(ISSUER).setIssuedAt().setExpirationTime('5m').sign(privateKey);
    const routes = [
      route('loopback', { authorization: { rules: ['cidr("127.0.0.0/8").containsIP(source.address)'] } }),
      route('private', { authorization: { rules: ['cidr("10.0.0.0/8").containsIP(source.address)', 'cidr("192.168.0.0/16").containsIP(ip(source.address))'] } }),
      route('v6', { authorization: { rules: ['cidr("::1/128").containsIP(source.address) || cidr("127.0.0.1/32").containsIP(source.address)'] } }),
      route('header', { authorization: { rules: ['request.headers["x-role"] == "admin"', 'request.method == "DELETE"'] } }),
      route('query', { authorization: { rules: ['request.query["ticket"] == "t-42" && request.path.startsWith("/query/")'] } }),
      route('errors', { authorization: { rules: ['request.headers["x-missing"] == "yes"', 'int(request.headers["x-n"]) > 5'] } }),
      route('veto', { authorization: { rules: [{ allow: 'true' }, { deny: 'request.headers["x-block"] == "1"' }, { deny: 'fail("a failing deny rule counts as false")' }] } }),
      route('require', { authorization: { rules: [{ require: 'request.method == "GET"' }, { require: 'has(request.headers.accept)' }] } }),
      route('mixed', { authorization: { rules: [{ require: 'request.headers["x-tenant"] == "acme"' }, 'request.headers["x-role"] == "admin"', 'request.headers["x-role"] == "ops"'] } }),
      route('empty', { authorization: { rules: [] } }),
      route('identity', { testIdentity: {}, authorization: { rules: ['testUser.name == "alice"', '"admins" in testUser.groups'] } }),
      ...(jwtAuth
        ? [route('jwt', { jwtAuth: { issuer: ISSUER, jwks: { file: jwksFile } }, authorization: { rules: ['jwt.sub == "alice"', '"admins" in jwt.groups'] } })]
        : []),
      {
        name: 'backend-level',
        matches: [{ path: { pathPrefix: '/backend-level' } }],
        backends: [{ host: `127.0.0.1:${upstream.port}`, policies: { authorization: { rules: ['request.headers["x-backend-ok"] == "1"'] } } }],
      },
    ];
    gw = await startGateway({ binds: [{ port, listeners: [{ routes }] }] }, { preset: preset(authorization, testIdentity, jwtAuth) });
  });
  after(async () => {
    await gw?.stop();
    await upstream?.close();
  });

  async function call(path: string, headers: Record<string, string> = {}, method = 'GET') {
    const before = upstream.received.length;
    const res = await request(`${gw.url(port)}${path}`, { method, headers });
    const text = await res.body.text();
    return { status: res.statusCode, headers: res.headers, text, reachedUpstream: upstream.received.length > before };
  }

  function assertDenied(r: { status: number; headers: Record<string, unknown>; text: string; reachedUpstream: boolean }, why?: string) {
    assert.equal(r.status, 403, why);
    assert.equal(r.headers['content-type'], 'application/json');
    assert.deepEqual(JSON.parse(r.text), { error: { type: 'forbidden', message: 'authorization failed' } });
    assert.equal(r.reachedUpstream, false, 'a denied request never reaches the upstream');
  }

  it('allows and denies by source IP range (cidr().containsIP(source.address) from 127.0.0.1)', async () => {
    const ok = await call('/loopback');
    assert.equal(ok.status, 200);
    assert.equal(ok.reachedUpstream, true);
    assertDenied(await call('/private'));
    assert.equal((await call('/v6')).status, 200);
  });

  it('allows by header: any allow rule true is enough', async () => {
    assertDenied(await call('/header'));
    assertDenied(await call('/header', { 'x-role': 'user' }));
    assert.equal((await call('/header', { 'x-role': 'admin' })).status, 200);
    assert.equal((await call('/header', {}, 'DELETE')).status, 200, 'the second allow rule');
  });

  it('allows by query parameter', async () => {
    assert.equal((await call('/query/x?ticket=t-42')).status, 200);
    assertDenied(await call('/query/x?ticket=t-41'));
    assertDenied(await call('/query/x'));
  });

  it('a rule that fails to evaluate counts as false', async () => {
    assertDenied(await call('/errors'), 'missing header: both rules error');
    assertDenied(await call('/errors', { 'x-n': 'not-a-number' }));
    assert.equal((await call('/errors', { 'x-n': '6' })).status, 200);
    assert.equal((await call('/errors', { 'x-missing': 'yes' })).status, 200);
  });

  it('a deny rule vetoes any allow; a failing deny rule does not deny', async () => {
    assert.equal((await call('/veto')).status, 200);
    assertDenied(await call('/veto', { 'x-block': '1' }));
  });

  it('require rules must all hold; with no allow rules that is enough', async () => {
    assert.equal((await call('/require', { accept: 'text/plain' })).status, 200);
    assertDenied(await call('/require', { accept: 'text/plain' }, 'POST'));
    const noAccept = await request(`${gw.url(port)}/require`, { headers: {} });
    await noAccept.body.text();
    // undici sends no Accept by default: the second require fails.
    assert.equal(noAccept.statusCode, 403);
  });

  it('require and allow rules together: requires AND, allows OR', async () => {
    assert.equal((await call('/mixed', { 'x-tenant': 'acme', 'x-role': 'ops' })).status, 200);
    assertDenied(await call('/mixed', { 'x-tenant': 'acme', 'x-role': 'guest' }));
    assertDenied(await call('/mixed', { 'x-tenant': 'other', 'x-role': 'admin' }));
  });

  it('an empty rule list allows everything', async () => {
    assert.equal((await call('/empty')).status, 200);
  });

  it('reads attributes published by an authentication policy (test-only `testUser`)', async () => {
    assert.equal((await call('/identity', { 'x-test-user': 'alice' })).status, 200);
    assert.equal((await call('/identity', { 'x-test-user': 'bob', 'x-test-groups': 'users,admins' })).status, 200);
    assertDenied(await call('/identity', { 'x-test-user': 'bob', 'x-test-groups': 'users' }));
    assertDenied(await call('/identity'), 'no attribute: the rules fail, so they count as false');
  });

  it('reads JWT claims published by jwtAuth', { skip: jwtAuth ? false : 'plugins/policies/jwt-auth is not present' }, async () => {
    const alice = await signToken({ sub: 'alice' });
    const bob = await signToken({ sub: 'bob', groups: ['admins'] });
    const carol = await signToken({ sub: 'carol', groups: ['users'] });
    assert.equal((await call('/jwt', { authorization: `Bearer ${alice}` })).status, 200);
    assert.equal((await call('/jwt', { authorization: `Bearer ${bob}` })).status, 200);
    assertDenied(await call('/jwt', { authorization: `Bearer ${carol}` }));
    assertDenied(await call('/jwt'), 'no token (optional mode): no claims, so no rule holds');
  });

  it('applies as a backend policy too', async () => {
    assertDenied(await call('/backend-level'));
    assert.equal((await call('/backend-level', { 'x-backend-ok': '1' })).status, 200);
  });

  it('a bad expression is a config error at its position', async () => {
    const yaml = (rule: string) =>
      `binds:\n- port: ${port}\n  listeners:\n  - routes:\n    - policies:\n        authorization:\n          rules:\n          - ${rule}\n      backends: [{ host: "127.0.0.1:1" }]\n`;
    await assert.rejects(gw.gateway.compile(yaml(`'request.path ==' `)), /:8:29: invalid CEL expression `request\.path ==`/);
    await assert.rejects(gw.gateway.compile(yaml(`'nosuch.var == 1'`)), /:8:14: invalid CEL expression .*unknown variable `nosuch`/);
    await assert.rejects(gw.gateway.compile(yaml(`'cidr(1).containsIP(source.address)'`)), /:8:14: invalid CEL expression .*'cidr\(int\)'/);
    await assert.rejects(gw.gateway.compile(yaml(`'request.method + "x"'`)), /:8:13: a rule must be a boolean expression; `request\.method \+ "x"` is of type `string`/);
    await assert.rejects(gw.gateway.compile(yaml(`{ deny: 'request.((' }`)), /:8:30: invalid CEL expression `request\.\(\(`/);
    await assert.rejects(gw.gateway.compile(yaml(`{ allow: 'true', deny: 'false' }`)), /only one of `allow`, `deny`, `require` may be set/);
    await assert.rejects(gw.gateway.compile(yaml(`{ permit: 'true' }`)), /unknown key `permit`/);
  });
});
