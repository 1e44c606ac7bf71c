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
import { checkLazySums, checkRefundsHeld, checkRefusalsTakeNothing, checkSettlementsRide, checkTimerSends, countCalls, withTwoStores } from '../../../test/helpers/key-store-sums.ts';
import { PgKeyStore } from './pg-store.ts';
import { startSilentServer } from '../../../test/helpers/silent-server.ts';

const found = locatePostgres();
const skip = 'skip' in found ? found.skip : false;
let server: RunningPostgres | undefined;
before(async () => {
  if (!skip) server = await startPostgres(found as { initdb: string; postgres: string });
});
after(() => server?.stop());

/** Count the statements a store sends (each `pool.query` is one round trip). */
const countQueries = (store: PgKeyStore): { readonly n: number } => countCalls((store as unknown as { pool: object }).pool, 'query');
const open = (prefix: string) => () => PgKeyStore.open(server!.url, prefix);

test('postgres store: one round trip per reservation, settlements riding on it; refusals take nothing but apply them; the timer sends them alone', { skip }, () =>
  withTwoStores(open('unit_'), async (store, other) => {
    const { lines, deltas } = await checkSettlementsRide(store, other, countQueries(store));
    await checkRefusalsTakeNothing(store, other, { ...lines[0]!, limit: 20 }, lines[1]!, 12, 12);
    store.settle(deltas);
    await checkTimerSends(other, ['k:a', 'k:b'], [23, 8]);
  }));

test('postgres store: concurrent reservations of two stores (two replicas) stop at the limit', { skip }, () =>
  withTwoStores(open('race_'), async (a, b) => {
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
  }));

test('postgres store: one round trip per request (a cached key, confirmed by the reservation); rotation and revocation by another replica refuse at once', { skip }, () =>
  withTwoStores(open('cache_'), (store, other) => checkKeyCache(store, other, countQueries(store))));

test('postgres store: lazy (lifetime) settlements are summed and ride on a reservation once LAZY_MS old (5 s, ADR 0111); a read of counters sees them at once (ADR 0072, 0091)', { skip }, () =>
  withTwoStores(open('lazy_'), checkLazySums));

test('postgres store: a charge is written within SETTLE_DELAY_MS, a refund held until a reservation names its counter or REFUND_HOLD_MS; reads write held refunds first (ADR 0097)', { skip }, () =>
  withTwoStores(open('held_'), checkRefundsHeld));

test('postgres store: a server that takes the connection and never answers fails the open at the deadline, not never', async () => {
  const silent = await startSilentServer();
  try {
    const started = Date.now();
    await assert.rejects(PgKeyStore.open(`postgres://u:pw@127.0.0.1:${silent.port}/db`, 'p_', 300), /timeout/i);
    assert.ok(Date.now() - started < 5_000);
  } finally {
    await silent.close();
  }
});
