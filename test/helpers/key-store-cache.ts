// The shared stores' key cache, as a replica sees it (ADR 0061): after its first lookup a request makes one round trip
// (the reservation, which confirms the cached key and carries the settlements); a key rotated or revoked by another
// replica is refused by the next reservation (KEY_GONE), nothing taken; a request that reserves nothing trusts the
// cache for at most KEY_CACHE_MS. Used by the Redis and PostgreSQL store tests against real servers.
import { strict as assert } from 'node:assert';
import { KEY_CACHE_MS } from '../../plugins/lib/key-store/key-cache.ts';
import { digestOf } from '../../plugins/lib/key-store/secrets.ts';
import { KEY_GONE } from '../../plugins/lib/key-store/types.ts';
import type { KeyRecord, KeyStore } from '../../plugins/lib/key-store/types.ts';

/** `store` and `other` share one server and prefix; `trips` counts the round trips `store` makes. */
export async function checkKeyCache(store: KeyStore, other: KeyStore, trips: { readonly n: number }): Promise<void> {
  const start = trips.n;
  const record = (id: string): KeyRecord => ({ id, team: 't', budgets: [], prefix: 'sk-…', createdAt: new Date(0).toISOString(), source: 'api' });
  await other.create(record('a'), digestOf('secret-a'));
  await other.create(record('b'), digestOf('secret-b'));
  const lines = [{ counter: 'k:a', limit: 1000, amount: 10, expiresAt: 0 }, { counter: 't:t', limit: 1000, amount: 10, expiresAt: 0 }];
  const request = async (secret: string): Promise<number | undefined> => {
    const found = await store.find(digestOf(secret));
    if (!found) return undefined;
    const r = await store.reserve(lines, digestOf(secret));
    store.settle(lines.map((l) => ({ counter: l.counter, amount: -4, expiresAt: 0 })));
    return r;
  };
  assert.equal(await request('secret-a'), -1);
  assert.equal(trips.n - start, 2, 'the first request looks its key up');
  for (let i = 0; i < 5; i++) assert.equal(await request('secret-a'), -1);
  assert.equal(trips.n - start, 2 + 5, 'then one round trip per request: the reservation, settlements riding on it');
  assert.deepEqual(await other.values(['k:a', 't:t']), [6 * 10 - 5 * 4, 60 - 20]);

  // Another replica rotates `a`: the cached record is still handed out, but its reservation is refused, nothing taken.
  await other.rotate('a', digestOf('secret-a2'), 'sk-…', new Date().toISOString());
  assert.ok(await store.find(digestOf('secret-a')), 'still cached');
  assert.equal(await store.reserve(lines, digestOf('secret-a')), KEY_GONE);
  assert.deepEqual(await other.values(['k:a', 't:t']), [60 - 24, 60 - 24], 'nothing reserved; the queued settlement still applied');
  assert.equal(await store.find(digestOf('secret-a')), undefined, 'looked up again once refused');
  assert.equal(await request('secret-a2'), -1, 'the new secret works');

  // Revoked by another replica: refused at once, lines or not (a key without budgets is only checked).
  assert.equal(await request('secret-b'), -1);
  await other.revoke('b', new Date().toISOString());
  assert.equal(await store.reserve([], digestOf('secret-b')), KEY_GONE);
  assert.equal(await store.reserve([], digestOf('secret-a2')), -1);

  // A request that makes no reservation trusts the cached record for at most KEY_CACHE_MS.
  assert.ok(await store.find(digestOf('secret-a2')));
  await other.revoke('a', new Date().toISOString());
  const cached = await store.find(digestOf('secret-a2'));
  assert.ok(cached && cached.revokedAt === undefined, 'served from the cache');
  await new Promise((r) => setTimeout(r, KEY_CACHE_MS + 50));
  assert.equal(await store.find(digestOf('secret-a2')), undefined, 'gone once the cache entry expired');

  // A key in use stays cached: each reservation's check vouches for it anew, so a key used every 0.6 × KEY_CACHE_MS
  // (1,000 keys in turn) is looked up once, not again every KEY_CACHE_MS after its lookup.
  // (Round trips are not counted here: the settlement timer sends each request's settlement during the pauses.)
  await other.create(record('d'), digestOf('secret-d'));
  assert.equal(await request('secret-d'), -1);
  for (let i = 0; i < 3; i++) {
    await new Promise((r) => setTimeout(r, KEY_CACHE_MS * 0.6));
    const found = store.find(digestOf('secret-d'));
    assert.ok(!(found instanceof Promise) && found?.id === 'd', `request ${i + 2}, ${(i + 1) * 0.6} × KEY_CACHE_MS after the lookup: from the cache, no round trip`);
    assert.equal(await request('secret-d'), -1);
  }

  // Rotated here: this store forgets the old digest at once.
  await store.create(record('c'), digestOf('secret-c'));
  assert.ok(await store.find(digestOf('secret-c')));
  await store.rotate('c', digestOf('secret-c2'), 'sk-…', new Date().toISOString());
  assert.equal(await store.find(digestOf('secret-c')), undefined);
}
