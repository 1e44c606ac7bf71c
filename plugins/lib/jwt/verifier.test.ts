import assert from 'node:assert/strict';
import { createHmac, createPrivateKey, createSign } from 'node:crypto';
import type { JsonWebKey } from 'node:crypto';
import { createServer } from 'node:http';
import { before, describe, it } from 'node:test';
import * as jose from 'jose';
import { parseJwks } from './keys.ts';
import { StaticKeySource } from './remote-jwks.ts';
import type { KeySource } from './remote-jwks.ts';
import { JwtVerifier, normalizeRequiredClaims } from './verifier.ts';
import type { JwtFailureReason, JwtProvider, JwtResult } from './verifier.ts';

const ISS = 'https://issuer.test';
const AUD = 'api://test';

interface KeyPair {
  kid: string;
  alg: string;
  privateJwk: jose.JWK;
  publicJwk: jose.JWK;
}

async function pair(alg: string, kid: string, options: Record<string, unknown> = {}): Promise<KeyPair> {
  const { privateKey, publicKey } = await jose.generateKeyPair(alg, { extractable: true, ...options });
  return { kid, alg, privateJwk: await jose.exportJWK(privateKey), publicJwk: { ...(await jose.exportJWK(publicKey)), kid } };
}

function b64(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

async function sign(k: KeyPair, claims: jose.JWTPayload, header: Partial<jose.JWTHeaderParameters> = {}, alg = k.alg): Promise<string> {
  // WebCrypto keys are bound to one algorithm: import the private JWK for the one asked for.
  return new jose.SignJWT(claims).setProtectedHeader({ alg, kid: k.kid, ...header }).sign(await jose.importJWK(k.privateJwk, alg));
}

/** An RS256 token signed by hand, for headers jose's signer refuses to write (an unknown `crit`). */
function signRaw(k: KeyPair, header: Record<string, unknown>, claims: jose.JWTPayload): string {
  const input = `${b64({ alg: 'RS256', kid: k.kid, ...header })}.${b64(claims)}`;
  const key = createPrivateKey({ key: k.privateJwk as JsonWebKey, format: 'jwk' });
  return `${input}.${createSign('RSA-SHA256').update(input).sign(key).toString('base64url')}`;
}

const now = (): number => Math.floor(Date.now() / 1000);

function provider(keys: KeySource, extra: Partial<JwtProvider> = {}): JwtProvider {
  return { issuer: ISS, audiences: [AUD], keys, requiredClaims: ['exp'], ...extra };
}

async function reason(v: JwtVerifier, token: string): Promise<JwtFailureReason | 'ok'> {
  const r = await v.verify(token);
  return r.ok ? 'ok' : r.reason;
}

describe('JwtVerifier', () => {
  let rsa: KeyPair;
  let ec: KeyPair;
  let ec384: KeyPair;
  let ed: KeyPair;
  let keys: StaticKeySource;
  let v: JwtVerifier;
  const good = (): jose.JWTPayload => ({ iss: ISS, aud: AUD, sub: 'alice', exp: now() + 300 });

  before(async () => {
    rsa = await pair('RS256', 'rsa-1');
    ec = await pair('ES256', 'ec-1');
    ec384 = await pair('ES384', 'ec-2');
    ed = await pair('EdDSA', 'ed-1');
    const parsed = parseJwks({ keys: [rsa.publicJwk, ec.publicJwk, ec384.publicJwk, ed.publicJwk] });
    assert.deepEqual(parsed.problems, []);
    keys = new StaticKeySource(parsed);
    v = new JwtVerifier([provider(keys)]);
  });

  it('accepts RS256, PS256 (same RSA key), ES256, ES384 and EdDSA tokens and returns the claims', async () => {
    for (const [k, alg] of [[rsa, 'RS256'], [rsa, 'PS384'], [ec, 'ES256'], [ec384, 'ES384'], [ed, 'EdDSA']] as const) {
      const r = await v.verify(await sign(k, { ...good(), team: 'qa' }, {}, alg));
      assert.equal(r.ok, true, `${alg}: ${JSON.stringify(r)}`);
      assert.equal((r as { claims: Record<string, unknown> }).claims.team, 'qa');
    }
  });

  it('refuses alg none, HMAC (even keyed with the public key) and algorithms that do not fit the key', async () => {
    const payload = b64(good());
    assert.equal(await reason(v, `${b64({ alg: 'none', kid: 'rsa-1' })}.${payload}.`), 'unsupported_alg');
    assert.equal(await reason(v, `${b64({ alg: 'NONE', kid: 'rsa-1' })}.${payload}.`), 'unsupported_alg');
    // The classic confusion attack: HS256 with the RSA public key (as PEM and as JWK JSON) for the secret.
    const pem = await jose.exportSPKI((await jose.importJWK(rsa.publicJwk, 'RS256')) as Parameters<typeof jose.exportSPKI>[0]);
    for (const secret of [pem, JSON.stringify(rsa.publicJwk)]) {
      const head = b64({ alg: 'HS256', kid: 'rsa-1' });
      const sig = createHmac('sha256', secret).update(`${head}.${payload}`).digest('base64url');
      assert.equal(await reason(v, `${head}.${payload}.${sig}`), 'unsupported_alg');
    }
    // ES256 claimed for an RSA kid: refused before any signature check.
    assert.equal(await reason(v, await sign({ ...ec, kid: 'rsa-1' }, good())), 'unsupported_alg');
    assert.equal(await reason(v, await sign(rsa, good(), {}, 'RS512')), 'ok');
  });

  it('a JWK `alg` narrows the key to that algorithm', async () => {
    const only = new StaticKeySource(parseJwks({ keys: [{ ...rsa.publicJwk, alg: 'RS256' }] }));
    const narrow = new JwtVerifier([provider(only)]);
    assert.equal(await reason(narrow, await sign(rsa, good())), 'ok');
    assert.equal(await reason(narrow, await sign(rsa, good(), {}, 'PS256')), 'unsupported_alg');
  });

  it('malformed tokens, a missing kid and an unknown kid', async () => {
    assert.equal(await reason(v, 'not-a-jwt'), 'malformed');
    assert.equal(await reason(v, 'a.b.c.d.e'), 'malformed');
    assert.equal(await reason(v, `${b64({ kid: 'rsa-1' })}.${b64(good())}.xx`), 'malformed');
    assert.equal(await reason(v, await sign(rsa, good(), { kid: undefined })), 'missing_kid');
    assert.equal(await reason(v, await sign({ ...rsa, kid: 'nope' }, good())), 'unknown_kid');
  });

  it('hostile headers: jku, x5u, x5c and jwk are never followed or trusted; unknown crit is refused; odd kids stay lookups', async () => {
    // A key server the token points to: the verifier must never ask it.
    let asked = 0;
    const server = createServer((_req, res) => {
      asked++;
      res.end('{"keys":[]}');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/jwks`;
      const attacker = await pair('RS256', 'rsa-1');
      const embedded = { ...attacker.publicJwk, kid: 'rsa-1' };
      for (const header of [{ jku: url }, { x5u: url }, { x5c: ['MIIB'] }, { jwk: embedded }, { jku: url, jwk: embedded }]) {
        assert.equal(await reason(v, await sign(attacker, good(), header as Partial<jose.JWTHeaderParameters>)), 'bad_signature', JSON.stringify(Object.keys(header)));
      }
      // Signed by the real key, the same headers change nothing: the configured key set alone decides.
      assert.equal(await reason(v, await sign(rsa, good(), { jku: url, jwk: embedded } as Partial<jose.JWTHeaderParameters>)), 'ok');
      assert.equal(asked, 0);
    } finally {
      server.close();
    }
    // RFC 7515 4.1.11: a `crit` extension the verifier does not understand makes the token invalid.
    assert.equal(await reason(v, signRaw(rsa, {}, good())), 'ok');
    assert.notEqual(await reason(v, signRaw(rsa, { crit: ['exp-policy'], 'exp-policy': 1 }, good())), 'ok');
    assert.equal(await reason(v, signRaw(rsa, { crit: [] }, good())), 'malformed');
    assert.equal(await reason(v, signRaw(rsa, { crit: ['b64'], b64: false }, good())), 'invalid_claim');
    for (const kid of ['../../etc/passwd', "x' OR '1'='1", '__proto__', 'constructor', 'k'.repeat(10_000)]) {
      const r = await v.verify(await sign({ ...rsa, kid }, good()));
      assert.equal(r.ok ? 'ok' : r.reason, 'unknown_kid', kid.slice(0, 20));
      assert.ok(!r.ok && r.message.length < 120, 'the kid is quoted bounded');
    }
  });

  it('nested and oversized tokens, odd encodings and extreme claim values', async () => {
    const inner = await sign(rsa, good());
    // A nested JWT (cty: JWT) is not unwrapped: its payload is not a claims object.
    const nestedHead = b64({ alg: 'RS256', kid: 'rsa-1', cty: 'JWT' });
    const nested = await new jose.CompactSign(new TextEncoder().encode(inner))
      .setProtectedHeader({ alg: 'RS256', kid: 'rsa-1', cty: 'JWT' })
      .sign(await jose.importJWK(rsa.privateJwk, 'RS256'));
    assert.ok(nested.startsWith(nestedHead));
    assert.equal(await reason(v, nested), 'invalid_claim');
    assert.equal(await reason(v, '.'.repeat(100_000)), 'malformed');
    assert.equal(await reason(v, inner.replace('.', '=.')), 'malformed', 'base64url has no padding');
    assert.equal(await reason(v, `*${inner.slice(1)}`), 'malformed');
    assert.equal(await reason(v, `${b64({ alg: 'RS256', kid: 'rsa-1' })}.${'A'.repeat(1 << 20)}.AAAA`), 'bad_signature');
    // A megabyte-long valid token is verified but never cached (bounded cache memory).
    const big = new JwtVerifier([provider(keys)]);
    assert.equal(await reason(big, await sign(rsa, { ...good(), pad: 'p'.repeat(1 << 20) })), 'ok');
    assert.equal(big.cacheSize, 0);
    // exp far in the future is accepted, yet cached no longer than the cache's own limit; a string iat is refused.
    let clock = Date.now();
    const far = new JwtVerifier([provider(keys)], { now: () => clock, cacheMaxAgeMs: 60_000 });
    const forever = await sign(rsa, { ...good(), exp: 1e300 });
    assert.equal(await reason(far, forever), 'ok');
    clock += 61_000;
    assert.ok(far.verify(forever) instanceof Promise, 'checked again after the cache limit');
    assert.equal(await reason(v, await sign(rsa, { ...good(), iat: 'x' as unknown as number })), 'invalid_claim');
  });

  it('a tampered payload or signature fails the signature check', async () => {
    const token = await sign(rsa, good());
    const [h, p, s] = token.split('.') as [string, string, string];
    const evil = b64({ ...good(), sub: 'root' });
    assert.equal(await reason(v, `${h}.${evil}.${s}`), 'bad_signature');
    const flipped = s.slice(0, 10) + (s[10] === 'A' ? 'B' : 'A') + s.slice(11);
    assert.equal(await reason(v, `${h}.${p}.${flipped}`), 'bad_signature');
  });

  it('iss must match exactly; aud must intersect the audiences; empty audiences skip the aud check', async () => {
    assert.equal(await reason(v, await sign(rsa, { ...good(), iss: `${ISS}/` })), 'wrong_issuer');
    assert.equal(await reason(v, await sign(rsa, { ...good(), iss: undefined })), 'missing_claim');
    assert.equal(await reason(v, await sign(rsa, { ...good(), aud: 'api://other' })), 'wrong_audience');
    assert.equal(await reason(v, await sign(rsa, { ...good(), aud: ['api://other', AUD] })), 'ok');
    assert.equal(await reason(v, await sign(rsa, { ...good(), aud: undefined })), 'missing_claim');
    const anyAud = new JwtVerifier([provider(keys, { audiences: [] })]);
    assert.equal(await reason(anyAud, await sign(rsa, { ...good(), aud: 'api://other' })), 'ok');
    assert.equal(await reason(anyAud, await sign(rsa, { ...good(), aud: undefined })), 'ok');
  });

  it('exp and nbf are checked with a small clock skew', async () => {
    assert.equal(await reason(v, await sign(rsa, { ...good(), exp: now() - 3600 })), 'expired');
    assert.equal(await reason(v, await sign(rsa, { ...good(), exp: now() - 10 })), 'ok', 'within the skew');
    assert.equal(await reason(v, await sign(rsa, { ...good(), nbf: now() + 3600 })), 'not_yet_valid');
    assert.equal(await reason(v, await sign(rsa, { ...good(), nbf: now() + 10 })), 'ok', 'within the skew');
    assert.equal(await reason(v, await sign(rsa, { ...good(), exp: 'soon' as unknown as number })), 'invalid_claim');
    // A malformed nbf is not a token that will become valid later.
    const badNbf = await v.verify(await sign(rsa, { ...good(), nbf: 'later' as unknown as number }));
    assert.deepEqual(badNbf.ok ? undefined : [badNbf.reason, badNbf.message], ['invalid_claim', 'the token claim `nbf` is invalid']);
  });

  it('requiredClaims: default [exp]; [] requires none but an expired exp still fails; unknown names are ignored', async () => {
    const noExp = { iss: ISS, aud: AUD };
    assert.equal(await reason(v, await sign(rsa, noExp)), 'missing_claim');
    const none = new JwtVerifier([provider(keys, { requiredClaims: normalizeRequiredClaims([]) })]);
    assert.equal(await reason(none, await sign(rsa, noExp)), 'ok');
    assert.equal(await reason(none, await sign(rsa, { ...noExp, exp: now() - 3600 })), 'expired');
    assert.equal(await reason(none, await sign(rsa, { ...noExp, nbf: now() + 3600 })), 'not_yet_valid');
    const sub = new JwtVerifier([provider(keys, { requiredClaims: normalizeRequiredClaims(['sub', 'jti', 'iat']) })]);
    assert.equal(await reason(sub, await sign(rsa, noExp)), 'missing_claim', 'sub is required');
    assert.equal(await reason(sub, await sign(rsa, { ...noExp, sub: 'x' })), 'ok', 'exp, jti and iat are not');
    assert.deepEqual(normalizeRequiredClaims(undefined), ['exp']);
    assert.deepEqual(normalizeRequiredClaims(['nbf', 'jti', 'nbf']), ['nbf']);
  });

  it('several providers: the token iss chooses; an unknown or missing iss is refused', async () => {
    const other = new StaticKeySource(parseJwks({ keys: [ec.publicJwk] }));
    const multi = new JwtVerifier([provider(keys), provider(other, { issuer: 'https://b.test', audiences: ['b'] })]);
    assert.equal(await reason(multi, await sign(ec, { ...good(), iss: 'https://b.test', aud: 'b' })), 'ok');
    assert.equal(await reason(multi, await sign(rsa, { ...good(), iss: 'https://b.test', aud: 'b' })), 'unknown_kid', "b's keys only");
    assert.equal(await reason(multi, await sign(ec, { ...good(), iss: 'https://b.test' })), 'wrong_audience', "b's audiences only");
    assert.equal(await reason(multi, await sign(rsa, { ...good(), iss: 'https://c.test' })), 'unknown_issuer');
    assert.equal(await reason(multi, await sign(rsa, { ...good(), iss: undefined })), 'unknown_issuer');
  });

  it('caches a verification until the token expires, answering synchronously', async () => {
    let clock = Date.now();
    const cached = new JwtVerifier([provider(keys)], { now: () => clock });
    const exp = Math.floor(clock / 1000) + 60;
    const token = await sign(rsa, { ...good(), exp });
    const first = cached.verify(token);
    assert.ok(first instanceof Promise);
    assert.equal((await first).ok, true);
    const second = cached.verify(token);
    assert.ok(!(second instanceof Promise), 'a cache hit is synchronous');
    assert.equal((second as JwtResult).ok, true);
    clock = (exp + 31) * 1000;
    const later = cached.verify(token);
    assert.ok(later instanceof Promise, 'expired entries are not reused');
    assert.equal(((await later) as { reason?: string }).reason, 'expired');
  });

  it('a cached token answers only for itself: one with the same signature and another payload is checked (ADR 0043)', async () => {
    const cached = new JwtVerifier([provider(keys)]);
    const token = await sign(rsa, good());
    assert.equal((await cached.verify(token)).ok, true);
    assert.ok(!(cached.verify(token) instanceof Promise), 'cached');
    // The cache is keyed by the token's tail (its signature): a forged payload under the cached signature shares it.
    const [header, , signature] = token.split('.');
    const forged = `${header}.${b64({ ...good(), sub: 'mallory' })}.${signature}`;
    const result = cached.verify(forged);
    assert.ok(result instanceof Promise, 'not answered from the cache');
    assert.equal(((await result) as { reason?: string }).reason, 'bad_signature');
    assert.equal((cached.verify(token) as JwtResult).ok, true, 'the genuine token stays cached');
  });

  it('a cached token stops passing when its exp passes, with no other request in between (clock checked per hit)', async () => {
    let clock = Date.now();
    const cached = new JwtVerifier([provider(keys)], { now: () => clock, clockSkewSeconds: 0 });
    const exp = Math.floor(clock / 1000) + 5;
    const token = await sign(rsa, { ...good(), exp });
    assert.equal((await cached.verify(token)).ok, true);
    clock = exp * 1000 - 1;
    assert.equal((cached.verify(token) as JwtResult).ok, true);
    clock = exp * 1000;
    assert.equal(((await cached.verify(token)) as { reason?: string }).reason, 'expired');
  });

  it('the cache is bounded and failures are never cached', async () => {
    const small = new JwtVerifier([provider(keys)], { cacheEntries: 2 });
    for (let i = 0; i < 5; i++) await small.verify(await sign(rsa, { ...good(), jti: String(i) }));
    assert.equal(small.cacheSize, 2);
    await small.verify(await sign(rsa, { ...good(), exp: now() - 3600 }));
    assert.equal(small.cacheSize, 2);
    const off = new JwtVerifier([provider(keys)], { cacheEntries: 0 });
    await off.verify(await sign(rsa, good()));
    assert.equal(off.cacheSize, 0);
  });
});

describe('parseJwks', () => {
  it('refuses keys without kid, symmetric keys, unsupported curves and a mismatched alg; skips encryption keys', async () => {
    const rsa = await pair('RS256', 'r');
    const p521 = await pair('ES512', 'p521');
    const parsed = parseJwks({
      keys: [
        { ...rsa.publicJwk, kid: undefined },
        { kty: 'oct', kid: 'h', k: 'c2VjcmV0' },
        p521.publicJwk,
        { ...rsa.publicJwk, kid: 'wrong-alg', alg: 'ES256' },
        { ...rsa.publicJwk, kid: 'enc', use: 'enc' },
        rsa.publicJwk,
        rsa.publicJwk,
      ],
    });
    assert.deepEqual([...parsed.keys.keys()], ['r']);
    assert.equal(parsed.problems.length, 5, parsed.problems.join('\n'));
    assert.match(parsed.problems[0]!, /no `kid`/);
    assert.match(parsed.problems[1]!, /symmetric/);
    assert.match(parsed.problems[2]!, /P-256 or P-384/);
    assert.match(parsed.problems[3]!, /does not fit/);
    assert.match(parsed.problems[4]!, /appears twice/);
    assert.match(parseJwks({ nokeys: true }).problems[0]!, /not a JWKS/);
  });

  it('drops private members, so a private JWK in the set still verifies as a public key', async () => {
    const { privateKey } = await jose.generateKeyPair('ES256', { extractable: true });
    const priv = { ...(await jose.exportJWK(privateKey)), kid: 'p' };
    const v = new JwtVerifier([{ issuer: ISS, audiences: [], keys: new StaticKeySource(parseJwks({ keys: [priv] })), requiredClaims: [] }]);
    const token = await new jose.SignJWT({ iss: ISS }).setProtectedHeader({ alg: 'ES256', kid: 'p' }).sign(privateKey);
    assert.equal((await v.verify(token)).ok, true);
  });
});
