// The PostgreSQL store makes one round trip per request: a key found lately comes from the process's cache and the
// reservation's call confirms it (ADR 0061: rotated or revoked by another replica, KEY_GONE), and a request's
// settlement rides on the next reservation (ADR 0054): the sums are right, a refused reservation takes nothing but still applies them, the timer
// sends them alone, and concurrent reservations from two stores (two replicas) stop at the limit. A real PostgreSQL
// server (initdb in a temp dir), started and stopped here.
import { strict as assert } from 'node:assert';
import { after, before, test } from 'node:test';
import { locatePostgres, startPostgres } from '../../../test/helpers/postgres.ts';
import type { RunningPostgres } from '../../../test/helpers/postgres.ts';
import { checkKeyCache } from '../../../test/helpers/key-store-cache.ts';
import { PgKeyStore } from './pg-store.ts';

const found = locatePostgres();
const skip = 'skip' in found ? found.skip : false;
let server: RunningPostgres | undefined;
before(async () => {
  if (!skip) server = await startPostgres(found as { initdb: string; postgres: string });
});
after(() => server?.stop());

/** Count the statements a store sends (each `pool.query` is one round trip). */
function countQueries(store: PgKeyStore): { readonly n: number } {
  const pool = (store as unknown as { pool: { query: (...args: unknown[]) => unknown } }).pool;
  const counter = { n: 0 };
  const query = pool.query.bind(pool);
  pool.query = (...args: unknown[]) => {
    counter.n++;
    return query(...args);
  };
  return counter;
}

test('postgres store: one round trip per reservation, settlements riding on it; refusals take nothing but apply them; the timer sends them alone', { skip }, async () => {
  const store = await PgKeyStore.open(server!.url, 'unit_');
  const other = await PgKeyStore.open(server!.url, 'unit_');
  try {
    const queries = countQueries(store);
    const lines = ['a', 'b'].map((x) => ({ counter: `k:${x}`, limit: 1000, amount: 10, expiresAt: 0 }));
    const deltas = lines.map((l) => ({ counter: l.counter, amount: -4, expiresAt: Date.now() + 3_600_000 }));
    assert.equal(await store.reserve(lines), -1);
    store.settle(deltas);
    store.settle(deltas);
    assert.deepEqual(await other.values(['k:a', 'k:b']), [10, 10], 'not sent yet');
    assert.equal(queries.n, 1);
    assert.equal(await store.reserve(lines), -1);
    assert.equal(queries.n, 2, 'the settlements went with the reservation, in the same call');
    assert.deepEqual(await other.values(['k:a', 'k:b']), [20 - 8, 20 - 8]);

    // k:a is at 12 + a queued +10 = 22 ≥ 20: refused on line 0; k:b is not taken from; the settlement is applied.
    store.settle([{ counter: 'k:a', amount: 10, expiresAt: 0 }, { counter: 'k:elsewhere', amount: 3, expiresAt: 0 }]);
    assert.equal(await store.reserve([{ ...lines[0]!, limit: 20 }, lines[1]!]), 0);
    assert.deepEqual(await other.values(['k:a', 'k:b', 'k:elsewhere']), [22, 12, 3]);
    // The second line refuses: the first (a new counter) is not taken from.
    assert.equal(await store.reserve([{ counter: 'k:new', limit: 1e9, amount: 5, expiresAt: 0 }, { ...lines[1]!, limit: 12 }]), 1);
    assert.deepEqual(await other.values(['k:new', 'k:b']), [0, 12]);
    // A queued correction below the limit lets the next one through: (22 - 5) < 20, then + 10.
    store.settle([{ counter: 'k:a', amount: -5, expiresAt: 0 }]);
    assert.equal(await store.reserve([{ ...lines[0]!, limit: 20 }]), -1);
    assert.deepEqual(await other.values(['k:a']), [27]);

    store.settle(deltas);
    const deadline = Date.now() + 10_000;
    while ((await other.values(['k:a']))[0] !== 23 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    assert.deepEqual(await other.values(['k:a', 'k:b']), [23, 8], 'sent alone by the timer');
  } finally {
    await store.close();
    await other.close();
  }
});

test('postgres store: concurrent reservations of two stores (two replicas) stop at the limit', { skip }, async () => {
  const a = await PgKeyStore.open(server!.url, 'race_');
  const b = await PgKeyStore.open(server!.url, 'race_');
  try {
    // Each reservation takes 10 from a shared team counter and from its own key's; the team may reach 200.
    const line = (key: string) => [
      { counter: `k:${key}`, limit: 1e9, amount: 10, expiresAt: 0 },
      { counter: 't:shared', limit: 200, amount: 10, expiresAt: 0 },
    ];
    const results = await Promise.all(Array.from({ length: 60 }, (_, i) => {
      const store = i % 2 ? a : b;
      const r = store.reserve(line(`key${i % 3}`));
      store.settle([{ counter: `k:key${i % 3}`, amount: -1, expiresAt: 0 }]);
      return r;
    }));
    assert.equal(results.filter((r) => r === -1).length, 20, 'exactly limit / amount reservations pass');
    assert.ok(results.every((r) => r === -1 || r === 1), `refusals name the team line: ${results.join(',')}`);
    await a.flush();
    await b.flush();
    const [team, ...keys] = await a.values(['t:shared', 'k:key0', 'k:key1', 'k:key2']);
    assert.equal(team, 200);
    assert.equal(keys.reduce((x, y) => x + y, 0), 20 * 10 - 60, 'every settlement applied once');
  } finally {
    await a.close();
    await b.close();
  }
});

test('postgres store: one round trip per request (a cached key, confirmed by the reservation); rotation and revocation by another replica refuse at once', { skip }, async () => {
  const store = await PgKeyStore.open(server!.url, 'cache_');
  const other = await PgKeyStore.open(server!.url, 'cache_');
  try {
    await checkKeyCache(store, other, countQueries(store));
  } finally {
    await store.close();
    await other.close();
  }
});
