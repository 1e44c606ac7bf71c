import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { jwtExpiry, TokenCache } from './token-cache.ts';

function clock(start = 1_000_000): { now: () => number; advance(ms: number): void } {
  let t = start;
  return { now: () => t, advance: (ms) => void (t += ms) };
}

describe('TokenCache', () => {
  it('fetches once, then answers synchronously until the refresh window', async () => {
    const c = clock();
    const cache = new TokenCache({ now: c.now });
    let fetches = 0;
    const fetch = async () => ({ token: `t${++fetches}`, expiresAt: c.now() + 3_600_000 });
    assert.equal(await cache.get('a', fetch), 't1');
    assert.equal(cache.get('a', fetch), 't1');
    c.advance(50 * 60_000);
    assert.equal(cache.get('a', fetch), 't1');
    assert.equal(fetches, 1);
  });

  it('shares one fetch between concurrent misses', async () => {
    const cache = new TokenCache();
    let fetches = 0;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const fetch = async () => {
      fetches++;
      await gate;
      return { token: 'shared', expiresAt: Date.now() + 60_000 };
    };
    const all = [cache.get('k', fetch), cache.get('k', fetch), cache.get('k', fetch)];
    release();
    assert.deepEqual(await Promise.all(all), ['shared', 'shared', 'shared']);
    assert.equal(fetches, 1);
  });

  it('keys are separate (one token per audience)', async () => {
    const cache = new TokenCache();
    const fetch = (t: string) => async () => ({ token: t, expiresAt: Date.now() + 60_000 });
    assert.equal(await cache.get('aud-1', fetch('one')), 'one');
    assert.equal(await cache.get('aud-2', fetch('two')), 'two');
    assert.equal(cache.get('aud-1', fetch('x')), 'one');
  });

  it('inside the refresh window serves the old token and replaces it in the background', async () => {
    const c = clock();
    const cache = new TokenCache({ now: c.now });
    let n = 0;
    const fetch = async () => ({ token: `t${++n}`, expiresAt: c.now() + 3_600_000 });
    await cache.get('a', fetch);
    c.advance(56 * 60_000); // 4 min left: inside the 5-minute window
    assert.equal(cache.get('a', fetch), 't1');
    await new Promise((r) => setImmediate(r));
    assert.equal(cache.get('a', fetch), 't2');
    assert.equal(n, 2);
  });

  it('short-lived tokens are refreshed at half their life, and never sent within 10 s of expiry', async () => {
    const c = clock();
    const cache = new TokenCache({ now: c.now });
    let n = 0;
    const fetch = async () => ({ token: `t${++n}`, expiresAt: c.now() + 60_000 });
    await cache.get('a', fetch);
    c.advance(20_000);
    assert.equal(cache.get('a', fetch), 't1');
    assert.equal(n, 1);
    c.advance(35_000); // 5 s left
    const next = cache.get('a', fetch);
    assert.ok(next instanceof Promise, 'an almost expired token is not served');
    assert.equal(await next, 't2');
  });

  it('does not cache failures; the next request tries again', async () => {
    const cache = new TokenCache();
    let n = 0;
    const fetch = async () => {
      if (++n === 1) throw new Error('metadata server down');
      return { token: 'ok', expiresAt: Date.now() + 60_000 };
    };
    await assert.rejects(async () => cache.get('a', fetch), /metadata server down/);
    assert.equal(await cache.get('a', fetch), 'ok');
  });

  it('a synchronous throw becomes a rejection', async () => {
    const cache = new TokenCache();
    const result = cache.get('a', () => {
      throw new Error('boom');
    });
    assert.ok(result instanceof Promise);
    await assert.rejects(result as Promise<string>, /boom/);
  });

  it('gives up after the timeout', async () => {
    const cache = new TokenCache({ timeoutMs: 30 });
    await assert.rejects(async () => cache.get('a', () => new Promise(() => undefined), 'Google access token'), /timed out after 30ms fetching the Google access token/);
  });

  it('refuses an empty token', async () => {
    const cache = new TokenCache();
    await assert.rejects(async () => cache.get('a', async () => ({ token: '', expiresAt: Date.now() + 1000 })), /held no token/);
  });
});

describe('jwtExpiry', () => {
  it('reads exp in milliseconds; undefined for non-JWTs', () => {
    const jwt = ['{"alg":"none"}', '{"exp":1700000000}', ''].map((p) => Buffer.from(p).toString('base64url')).join('.');
    assert.equal(jwtExpiry(jwt), 1_700_000_000_000);
    assert.equal(jwtExpiry('opaque-token'), undefined);
    assert.equal(jwtExpiry('a.!!!.c'), undefined);
  });
});
