import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { after, before, describe, it } from 'node:test';
import * as jose from 'jose';
import { request } from 'undici';
import { stringify } from 'yaml';
import apiKey from '../../plugins/policies/api-key/plugin.ts';
import basicAuth from '../../plugins/policies/basic-auth/plugin.ts';
import jwtAuth from '../../plugins/policies/jwt-auth/plugin.ts';
import { fullPresetWith } from '../helpers/preset.ts';
import { startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { startOidcProvider } from '../helpers/oidc-provider.ts';
import type { RunningOidcProvider } from '../helpers/oidc-provider.ts';
import { freePort } from '../helpers/ports.ts';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';
import { testTempDir } from '../helpers/temp-dir.ts';

const PRESET = fullPresetWith(jwtAuth, apiKey, basicAuth);
const RESOURCE = 'http://127.0.0.1:3000/mcp';
const LOCAL_ISS = 'https://local.issuer.test';
const LOCAL_AUD = 'local-api';

const b64 = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url');
const now = (): number => Math.floor(Date.now() / 1000);

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

describe('jwtAuth', () => {
  let gw: RunningGateway;
  let port: number;
  let upstream: TestUpstream;
  let asA: RunningOidcProvider;
  let asB: RunningOidcProvider;
  let asR: RunningOidcProvider;
  let dir: string;
  let jwksRelative: string;
  let localKey: jose.JWK;
  let signLocal: (claims: jose.JWTPayload, header?: Partial<jose.JWTHeaderParameters>) => Promise<string>;

  const route = (name: string, policies: Record<string, unknown>) => ({
    name,
    matches: [{ path: { pathPrefix: `/${name}` } }],
    policies: {
      ...policies,
      transformations: { request: { set: { 'x-sub': 'jwt.sub', 'x-team': 'jwt.team', 'x-iss': 'jwt.iss' } } },
    },
    backends: [{ host: `127.0.0.1:${upstream.port}` }],
  });

  async function call(path: string, token?: string, headers: Record<string, string> = {}): Promise<Answer> {
    const res = await request(`${gw.url(port)}${path}`, { headers: token === undefined ? headers : { ...headers, authorization: `Bearer ${token}` } });
    return { status: res.statusCode, headers: res.headers, body: await res.body.text() };
  }

  /** The request the upstream saw last. */
  const seen = () => upstream.received.at(-1)!;

  function assertRejected(a: Answer, challenge: string, message?: RegExp): void {
    assert.equal(a.status, 401, a.body);
    assert.equal(a.headers['www-authenticate'], challenge);
    assert.equal(a.headers['content-type'], 'application/json');
    const body = JSON.parse(a.body) as { error: { type: string; message: string } };
    assert.equal(body.error.type, 'authentication_failed');
    assert.match(body.error.message, /^authentication failure: /);
    if (message) assert.match(body.error.message, message);
  }
  const assertInvalid = (a: Answer, message?: RegExp) => assertRejected(a, 'Bearer error="invalid_token"', message);

  before(async () => {
    port = await freePort();
    upstream = await startUpstream();
    [asA, asB, asR] = await Promise.all([startOidcProvider(), startOidcProvider(), startOidcProvider()]);
    // A local issuer whose JWKS is a file, so tests can craft expired, not-yet-valid and exp-less tokens.
    dir = testTempDir('switchyard-jwt-');
    const { privateKey, publicKey } = await jose.generateKeyPair('ES256', { extractable: true });
    localKey = { ...(await jose.exportJWK(publicKey)), kid: 'local-1', use: 'sig' };
    writeFileSync(join(dir, 'jwks.json'), JSON.stringify({ keys: [localKey] }));
    // Relative to the gateway's working directory (SPEC 5.1), which is this process's cwd.
    jwksRelative = relative(process.cwd(), join(dir, 'jwks.json'));
    assert.ok(!jwksRelative.startsWith('/'));
    signLocal = (claims, header = {}) => new jose.SignJWT(claims).setProtectedHeader({ alg: 'ES256', kid: 'local-1', ...header }).sign(privateKey);

    const a = { issuer: asA.issuer, audiences: [RESOURCE], jwks: { url: asA.jwksUri } };
    const local = { issuer: LOCAL_ISS, audiences: [LOCAL_AUD], jwks: { file: jwksRelative } };
    gw = await startGateway(
      {
        binds: [
          {
            port,
            listeners: [
              {
                routes: [
                  route('strict', { jwtAuth: { ...a, mode: 'strict' } }),
                  route('optional', { jwtAuth: a }),
                  route('permissive', { jwtAuth: { ...a, mode: 'permissive' } }),
                  route('multi', {
                    jwtAuth: {
                      mode: 'strict',
                      providers: [
                        { issuer: asA.issuer, audiences: [RESOURCE], jwks: { url: asA.jwksUri } },
                        { issuer: asB.issuer, audiences: ['https://b.example/api'], jwks: { url: asB.jwksUri } },
                        local,
                      ],
                    },
                  }),
                  route('rotate', { jwtAuth: { issuer: asR.issuer, audiences: [RESOURCE], jwks: { url: asR.jwksUri }, mode: 'strict' } }),
                  route('local', { jwtAuth: { ...local, mode: 'strict' } }),
                  route('noexp', { jwtAuth: { ...local, mode: 'strict', jwtValidationOptions: { requiredClaims: [] } } }),
                  route('needsub', { jwtAuth: { ...local, mode: 'strict', jwtValidationOptions: { requiredClaims: ['exp', 'sub', 'jti'] } } }),
                  route('anyaud', { jwtAuth: { issuer: LOCAL_ISS, jwks: { file: jwksRelative }, mode: 'strict' } }),
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
    await Promise.all([upstream?.close(), asA?.close(), asB?.close(), asR?.close()]);
    rmSync(dir, { recursive: true, force: true });
  });

  it('accepts a token issued by a real OIDC provider; claims reach CEL as jwt.<claim>; Authorization is removed', async () => {
    const token = await asA.token();
    const a = await call('/strict/x', token, { 'x-other': 'kept' });
    assert.equal(a.status, 200, a.body);
    const got = seen().headers;
    assert.equal(got.authorization, undefined, 'DECIDED 6: the accepted token does not go upstream');
    assert.equal(got['x-other'], 'kept');
    assert.equal(got['x-sub'], 'mcp-test-client');
    assert.equal(got['x-team'], 'qa');
    assert.equal(got['x-iss'], asA.issuer);
    // The second use is answered from the verification cache: same outcome.
    assert.equal((await call('/strict/x', token)).status, 200);
    assert.equal(seen().headers['x-sub'], 'mcp-test-client');
  });

  it('strict: a missing token is 401 with `WWW-Authenticate: Bearer`; a non-Bearer header counts as missing', async () => {
    assertRejected(await call('/strict'), 'Bearer', /no bearer token found/);
    assertRejected(await call('/strict', undefined, { authorization: 'Basic YTpi' }), 'Bearer');
    assertRejected(await call('/strict', undefined, { authorization: 'Bearer ' }), 'Bearer');
  });

  it('optional (the default): a missing token passes without claims; an invalid one is rejected', async () => {
    const missing = await call('/optional');
    assert.equal(missing.status, 200);
    assert.equal(seen().headers['x-sub'], undefined);
    assertInvalid(await call('/optional', 'garbage'), /not a compact JWS/);
    assert.equal((await call('/optional', await asA.token())).status, 200);
    assert.equal(seen().headers['x-sub'], 'mcp-test-client');
  });

  it('permissive: never rejects; an invalid token is ignored (no claims) and still withheld from the upstream', async () => {
    const a = await call('/permissive', 'garbage');
    assert.equal(a.status, 200);
    assert.equal(seen().headers['x-sub'], undefined);
    assert.equal(seen().headers.authorization, undefined);
    assert.equal((await call('/permissive')).status, 200);
    assert.equal((await call('/permissive', await asA.token())).status, 200);
    assert.equal(seen().headers['x-sub'], 'mcp-test-client');
    assert.equal(seen().headers.authorization, undefined);
  });

  it('wrong audience, wrong issuer and a tampered token are rejected', async () => {
    assertInvalid(await call('/strict', await asA.token({ resource: 'https://elsewhere.example/api' })), /audience/);
    // Another real provider: its key shares the kid `test-key-1` but not the key material.
    assertInvalid(await call('/strict', await asB.token()));
    assertInvalid(await call('/local', await signLocal({ iss: 'https://evil.test', aud: LOCAL_AUD, exp: now() + 60 })), /issuer/);
    const [h, p, s] = (await asA.token()).split('.') as [string, string, string];
    const claims = JSON.parse(Buffer.from(p, 'base64url').toString()) as Record<string, unknown>;
    assertInvalid(await call('/strict', `${h}.${b64({ ...claims, sub: 'admin' })}.${s}`), /signature/);
    assertInvalid(await call('/strict', `${h}.${p}.${s.slice(0, -4)}AAAA`), /signature/);
  });

  it('`alg: none` and HS256 keyed with the provider public key are refused', async () => {
    const p = (await asA.token()).split('.')[1]!;
    assertInvalid(await call('/strict', `${b64({ alg: 'none', typ: 'at+jwt', kid: 'test-key-1' })}.${p}.`), /alg: none/);
    const jwks = (await (await request(asA.jwksUri)).body.json()) as { keys: jose.JWK[] };
    const pem = await jose.exportSPKI((await jose.importJWK(jwks.keys[0]!, 'RS256')) as Parameters<typeof jose.exportSPKI>[0]);
    for (const secret of [pem, JSON.stringify(jwks.keys[0])]) {
      const h = b64({ alg: 'HS256', typ: 'at+jwt', kid: 'test-key-1' });
      const sig = createHmac('sha256', secret).update(`${h}.${p}`).digest('base64url');
      assertInvalid(await call('/strict', `${h}.${p}.${sig}`), /HMAC/);
    }
  });

  it('expired and not-yet-valid tokens are rejected (exp/nbf always checked when present)', async () => {
    const base = { iss: LOCAL_ISS, aud: LOCAL_AUD, sub: 'local-user' };
    assert.equal((await call('/local', await signLocal({ ...base, exp: now() + 60 }))).status, 200);
    assert.equal(seen().headers['x-sub'], 'local-user');
    assertInvalid(await call('/local', await signLocal({ ...base, exp: now() - 3600 })), /expired/);
    assertInvalid(await call('/local', await signLocal({ ...base, exp: now() + 60, nbf: now() + 3600 })), /not valid yet/);
    assertInvalid(await call('/noexp', await signLocal({ ...base, exp: now() - 3600 })), /expired/);
    assertInvalid(await call('/noexp', await signLocal({ ...base, nbf: now() + 3600 })), /not valid yet/);
  });

  it('requiredClaims: `exp` by default; `[]` accepts a token without exp; listed claims must be present', async () => {
    const base = { iss: LOCAL_ISS, aud: LOCAL_AUD };
    assertInvalid(await call('/local', await signLocal(base)), /lacks the required `exp` claim/);
    assert.equal((await call('/noexp', await signLocal(base))).status, 200);
    assertInvalid(await call('/needsub', await signLocal({ ...base, exp: now() + 60 })), /`sub`/);
    assert.equal((await call('/needsub', await signLocal({ ...base, exp: now() + 60, sub: 'x' }))).status, 200, 'jti is not a recognized claim: ignored');
  });

  it('audiences absent: aud is not checked', async () => {
    assert.equal((await call('/anyaud', await signLocal({ iss: LOCAL_ISS, aud: 'whatever', exp: now() + 60 }))).status, 200);
    assert.equal((await call('/anyaud', await signLocal({ iss: LOCAL_ISS, exp: now() + 60 }))).status, 200);
  });

  it('providers[]: the token iss picks the provider; an unknown issuer is 401', async () => {
    assert.equal((await call('/multi', await asA.token())).status, 200);
    assert.equal(seen().headers['x-iss'], asA.issuer);
    assert.equal((await call('/multi', await asB.token({ resource: 'https://b.example/api' }))).status, 200);
    assert.equal(seen().headers['x-iss'], asB.issuer);
    assert.equal((await call('/multi', await signLocal({ iss: LOCAL_ISS, aud: LOCAL_AUD, exp: now() + 60 }))).status, 200);
    assert.equal(seen().headers['x-iss'], LOCAL_ISS);
    // B's audiences apply to B's tokens.
    assertInvalid(await call('/multi', await asB.token()), /audience/);
    assertInvalid(await call('/multi', await signLocal({ iss: 'https://nobody.test', aud: LOCAL_AUD, exp: now() + 60 })), /issuer "https:\/\/nobody.test" is not accepted/);
  });

  it('a rotated provider key is fetched on the unknown kid; further unknown kids within 30 s do not refetch', async () => {
    const before = await asR.token();
    assert.equal((await call('/rotate', before)).status, 200);
    const fetchesAtStart = asR.jwksRequests;
    const kid = await asR.rotateKey();
    assert.equal(kid, 'test-key-2');
    const after = await asR.token();
    assert.equal(jose.decodeProtectedHeader(after).kid, 'test-key-2');
    assert.equal((await call('/rotate', after)).status, 200, 'the new key was fetched');
    assert.equal(asR.jwksRequests, fetchesAtStart + 1);
    // The old key left the set: its token, though verified before, is no longer accepted.
    assertInvalid(await call('/rotate', before), /unknown key "test-key-1"/);
    const bogus = `${b64({ alg: 'RS256', kid: 'made-up' })}.${after.split('.')[1]}.${after.split('.')[2]}`;
    for (let i = 0; i < 5; i++) assertInvalid(await call('/rotate', bogus), /unknown key "made-up"/);
    assert.equal(asR.jwksRequests, fetchesAtStart + 1, 'rate-limited: no refetch within 30 s');
  });

  it('fetched key sets survive a config reload: no refetch, tokens still accepted', async () => {
    const fetches = [asA.jwksRequests, asB.jwksRequests, asR.jwksRequests];
    const text = readFileSync(gw.file, 'utf8');
    assert.equal(await gw.gateway.reload(`${text}\n# touched\n`), true);
    assert.deepEqual([asA.jwksRequests, asB.jwksRequests, asR.jwksRequests], fetches);
    assert.equal((await call('/strict', await asA.token())).status, 200);
    assert.equal((await call('/multi', await asB.token({ resource: 'https://b.example/api' }))).status, 200);
    assert.deepEqual([asA.jwksRequests, asB.jwksRequests, asR.jwksRequests], fetches);
  });

  it('an unreachable JWKS URL loads with a positioned warning (ADR 0020); a missing file is a config error', async () => {
    const closed = await freePort();
    const text = (jwks: Record<string, string>) =>
      stringify({
        binds: [{ port, listeners: [{ routes: [{ policies: { jwtAuth: { issuer: 'x', jwks } }, backends: [{ host: '127.0.0.1:1' }] }] }] }],
      });
    await gw.gateway.compile(text({ url: `http://127.0.0.1:${closed}/jwks` }));
    // Logs are written in batches: give the line a moment.
    const logged = () => gw.logs.some((l) => /cannot load the JWKS from http:\/\/127\.0\.0\.1:\d+\/jwks/.test(l) && /jwks\.url/.test(l));
    for (let i = 0; i < 100 && !logged(); i++) await new Promise((resolve) => setTimeout(resolve, 10));
    assert.ok(logged(), gw.logs.slice(-5).join('\n'));
    await assert.rejects(gw.gateway.compile(text({ file: 'no/such/jwks.json' })), /cannot read the JWKS file `no\/such\/jwks\.json` \(resolved to .*no\/such\/jwks\.json.*no such file/);
    writeFileSync(join(dir, 'nokid.json'), JSON.stringify({ keys: [{ ...localKey, kid: undefined }] }));
    await assert.rejects(gw.gateway.compile(text({ file: relative(process.cwd(), join(dir, 'nokid.json')) })), /key #0 has no `kid`/);
    await assert.rejects(gw.gateway.compile(text({ file: 'a', url: 'http://b' })), /only one of `url`, `file` may be set/);
    // A file that is not JSON (a token file named by mistake, or on purpose through the admin UI's validator): the
    // error says so without quoting it (V8's message quotes up to about 20 characters of the text).
    writeFileSync(join(dir, 'token.txt'), 'ghp_notjsonsecret0\n');
    await assert.rejects(gw.gateway.compile(text({ file: relative(process.cwd(), join(dir, 'token.txt')) })), (err: Error) => {
      assert.match(err.message, /the JWKS file `.*token\.txt` is not valid JSON: Unexpected token/);
      assert.doesNotMatch(err.message, /ghp_|notjson/);
      return true;
    });
  });

  it('tokens do not appear in the logs; /config_dump shows the config', async () => {
    const token = await asA.token();
    await call('/strict', token);
    await call('/strict', `${token}x`);
    assert.ok(!gw.logs.some((l) => l.includes(token.split('.')[2]!)), 'no token signature in logs');
    const dump = await (await request(`${gw.adminUrl}/config_dump`)).body.text();
    assert.ok(!dump.includes(token.split('.')[2]!));
    assert.match(dump, /jwtAuth/);
  });
});
