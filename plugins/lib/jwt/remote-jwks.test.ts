import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import * as jose from 'jose';
import { RemoteJwks } from './remote-jwks.ts';
import type { JwksFetchResult } from './remote-jwks.ts';

async function publicJwk(kid: string): Promise<jose.JWK> {
  const { publicKey } = await jose.generateKeyPair('ES256', { extractable: true });
  return { ...(await jose.exportJWK(publicKey)), kid };
}

/** A JWKS endpoint stand-in: serves `keys`, counts fetches, can fail. */
function endpoint() {
  const state = {
    keys: [] as jose.JWK[],
    status: 200,
    cacheControl: undefined as string | undefined,
    failWith: undefined as Error | undefined,
    body: undefined as string | undefined,
    calls: 0,
  };
  const fetcher = async (): Promise<JwksFetchResult> => {
    state.calls++;
    if (state.failWith) throw state.failWith;
    return { status: state.status, body: state.body ?? JSON.stringify({ keys: state.keys }), cacheControl: state.cacheControl };
  };
  return { state, fetcher };
}

const flush = () => new Promise((resolve) => setImmediate(resolve));

describe('RemoteJwks', () => {
  let a: jose.JWK;
  let b: jose.JWK;
  before(async () => {
    a = await publicJwk('a');
    b = await publicJwk('b');
  });

  it('load fetches once; a second load reuses the held keys', async () => {
    const { state, fetcher } = endpoint();
    state.keys = [a];
    const jwks = new RemoteJwks('http://as/jwks', fetcher);
    await jwks.load();
    await jwks.load();
    assert.equal(state.calls, 1);
    assert.ok(jwks.get('a'));
    assert.equal(jwks.version, 1);
  });

  it('the first load fails readably: unreachable, HTTP error, not JSON, no usable key', async () => {
    const cases: [Partial<ReturnType<typeof endpoint>['state']>, RegExp][] = [
      [{ failWith: new Error('connect ECONNREFUSED') }, /ECONNREFUSED/],
      [{ status: 500 }, /HTTP 500/],
      [{ body: '<html>' }, /not JSON/],
      [{ body: JSON.stringify({ keys: [{ kty: 'oct', kid: 'x', k: 'AA' }] }) }, /no usable signature key.*symmetric/],
    ];
    for (const [patch, message] of cases) {
      const { state, fetcher } = endpoint();
      Object.assign(state, { keys: [a] }, patch);
      await assert.rejects(new RemoteJwks('http://as/jwks', fetcher).load(), message);
    }
  });

  it('an unknown kid refetches (rotation), then at most once per interval', async () => {
    let clock = 1_000_000;
    const { state, fetcher } = endpoint();
    state.keys = [a];
    const jwks = new RemoteJwks('http://as/jwks', fetcher, undefined, { now: () => clock, minRefetchIntervalMs: 30_000 });
    await jwks.load();
    state.keys = [b];
    assert.equal(jwks.get('b'), undefined);
    const found = await jwks.refetchFor('b');
    assert.equal(found?.kid, 'b', 'the rotated key is found after one refetch');
    assert.equal(state.calls, 2);
    assert.equal(jwks.version, 2);
    assert.equal(jwks.get('a'), undefined, 'the old key is gone');
    clock += 10_000;
    assert.equal(await jwks.refetchFor('zzz'), undefined);
    assert.equal(state.calls, 2, 'rate-limited: no fetch within 30 s of the last kid refetch');
    clock += 21_000;
    assert.equal(await jwks.refetchFor('zzz'), undefined);
    assert.equal(state.calls, 3, 'allowed again after the interval');
  });

  it('concurrent unknown-kid lookups share one fetch', async () => {
    const { state, fetcher } = endpoint();
    state.keys = [a];
    const jwks = new RemoteJwks('http://as/jwks', fetcher);
    await jwks.load();
    state.keys = [a, b];
    const results = await Promise.all([jwks.refetchFor('b'), jwks.refetchFor('b'), jwks.refetchFor('b')]);
    assert.deepEqual(results.map((k) => k?.kid), ['b', 'b', 'b']);
    assert.equal(state.calls, 2);
  });

  it('honours Cache-Control max-age (clamped) as the TTL, refreshing in the background', async () => {
    let clock = 0;
    const { state, fetcher } = endpoint();
    state.keys = [a];
    state.cacheControl = 'public, max-age=120';
    const jwks = new RemoteJwks('http://as/jwks', fetcher, undefined, { now: () => clock, minTtlMs: 60_000 });
    await jwks.load();
    clock = 119_000;
    assert.ok(jwks.get('a'));
    await flush();
    assert.equal(state.calls, 1, 'fresh: no refresh');
    state.keys = [a, b];
    clock = 120_000;
    assert.ok(jwks.get('a'), 'stale keys keep answering while the refresh runs');
    await flush();
    assert.equal(state.calls, 2);
    assert.ok(jwks.get('b'));
    state.cacheControl = 'max-age=1';
    clock = 240_000;
    jwks.get('a');
    await flush();
    assert.equal(state.calls, 3);
    clock = 240_000 + 59_000;
    jwks.get('a');
    await flush();
    assert.equal(state.calls, 3, 'max-age below the minimum is raised to 60 s');
  });

  it('a failed refresh keeps the old keys and retries later', async () => {
    let clock = 0;
    const { state, fetcher } = endpoint();
    state.keys = [a];
    const jwks = new RemoteJwks('http://as/jwks', fetcher, undefined, { now: () => clock, defaultTtlMs: 1000, retryAfterFailureMs: 5000 });
    await jwks.load();
    state.failWith = new Error('down');
    clock = 2000;
    jwks.get('a');
    await flush();
    assert.equal(state.calls, 2);
    assert.ok(jwks.get('a'), 'still held');
    clock = 4000;
    jwks.get('a');
    await flush();
    assert.equal(state.calls, 2, 'no retry before retryAfterFailureMs');
    state.failWith = undefined;
    clock = 7001;
    jwks.get('a');
    await flush();
    assert.equal(state.calls, 3);
  });

  it('an identity provider down at the first load: retried with bounded, jittered backoff until keys arrive (ADR 0020)', async () => {
    const { state, fetcher } = endpoint();
    state.keys = [a];
    state.failWith = new Error('connect ECONNREFUSED');
    const times: number[] = [];
    const timed = async (): Promise<JwksFetchResult> => {
      times.push(performance.now());
      if (times.length === 5) state.failWith = undefined;
      return fetcher();
    };
    const draws = [0, 0.999, 0.5, 0.999];
    const jwks = new RemoteJwks('http://as/jwks', timed, undefined, { initialBackoffMs: 40, maxBackoffMs: 100, random: () => draws.shift() ?? 0 });
    await assert.rejects(jwks.load(), /ECONNREFUSED/);
    assert.equal(jwks.available, false);
    assert.ok(jwks.retryAfterSeconds() >= 1);
    const deadline = Date.now() + 5000;
    while (!jwks.available && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 5));
    assert.equal(jwks.available, true, 'keys arrive once the endpoint answers');
    assert.ok(jwks.get('a'));
    assert.equal(state.calls, 5, 'four failures, then success');
    // Ceilings 40, 80, 100 (capped), 100; each delay is between half the ceiling and the ceiling.
    const gaps = times.slice(1).map((t, i) => t - times[i]!);
    for (const [i, [low, high]] of ([[20, 40], [80, 80], [75, 100], [100, 100]] as const).entries()) {
      assert.ok(gaps[i]! >= low - 2 && gaps[i]! < high + 60, `gap ${i}: ${gaps[i]}ms, expected ${low}-${high}`);
    }
    jwks.dispose();
  });

  it('dispose stops background attempts', async () => {
    const { state, fetcher } = endpoint();
    state.failWith = new Error('down');
    const jwks = new RemoteJwks('http://as/jwks', fetcher, undefined, { initialBackoffMs: 10, maxBackoffMs: 10 });
    await assert.rejects(jwks.load());
    jwks.dispose();
    await new Promise((resolve) => setTimeout(resolve, 60));
    assert.equal(state.calls, 1);
  });
});
