// What the shared key stores (Redis, PostgreSQL) must both do with reservations and settlements (ADR 0054): a
// settlement rides on the next reservation, a refused line takes nothing, a queued settlement counts in the check, and
// the timer sends settlements alone. Used by the two store tests against real servers (`checkLazyGroup` by the SQLite
// store's as well).
import { strict as assert } from 'node:assert';
import { LAZY_MS } from '../../plugins/lib/key-store/lazy-sums.ts';
import { steppedClock } from './clock.ts';
import { REFUND_HOLD_MS, SETTLE_DELAY_MS, STATES_MAX } from '../../plugins/lib/key-store/settlement-queue.ts';
import type { CounterDelta, CounterLine, KeyStore } from '../../plugins/lib/key-store/types.ts';

/** Count the calls of `target[method]` from now on (a store's round trips: `pool.query`, `client.command`). */
export function countCalls(target: object, method: string): { readonly n: number } {
  const t = target as Record<string, (...args: unknown[]) => unknown>;
  const counter = { n: 0 };
  const call = t[method]!.bind(target);
  t[method] = (...args: unknown[]) => {
    counter.n++;
    return call(...args);
  };
  return counter;
}

/** Open two stores on one server and prefix (two replicas), run `check`, close both. */
export async function withTwoStores<S extends KeyStore>(open: () => Promise<S>, check: (store: S, other: S) => Promise<void>): Promise<void> {
  const store = await open();
  const other = await open();
  try {
    await check(store, other);
  } finally {
    await store.close();
    await other.close();
  }
}

/**
 * Two lines (`k:a`, `k:b`, 10 each) reserved, two settlements of -4 queued (not sent), then a second reservation
 * carries them: both counters end at 12. `trips`, when given, must count one round trip per reservation.
 */
export async function checkSettlementsRide(store: KeyStore, other: KeyStore, trips?: { readonly n: number }): Promise<{ lines: CounterLine[]; deltas: CounterDelta[] }> {
  const start = trips?.n ?? 0;
  const lines = ['a', 'b'].map((x) => ({ counter: `k:${x}`, limit: 1000, amount: 10, expiresAt: 0 }));
  const deltas = lines.map((l) => ({ counter: l.counter, amount: -4, expiresAt: Date.now() + 3_600_000 }));
  assert.equal(await store.reserve(lines), -1);
  store.settle(deltas);
  store.settle(deltas);
  assert.deepEqual(await other.values(['k:a', 'k:b']), [10, 10], 'not sent yet');
  if (trips) assert.equal(trips.n - start, 1);
  assert.equal(await store.reserve(lines), -1);
  if (trips) assert.equal(trips.n - start, 2, 'the settlements went with the reservation, in the same call');
  assert.deepEqual(await other.values(['k:a', 'k:b']), [20 - 8, 20 - 8], 'sent with the reservation');
  return { lines, deltas };
}

/**
 * `a` (limit 20) is at `atA` with 20 - 10 ≤ atA < 15, `b` at `atB`. A queued +10 on `a` counts in the check: refused
 * on line 0, `b` not taken from, the settlement applied; a refusing second line takes nothing from the first; a
 * queued correction below the limit lets the next reservation through.
 */
export async function checkRefusalsTakeNothing(store: KeyStore, other: KeyStore, a: CounterLine, b: CounterLine, atA: number, atB: number): Promise<void> {
  store.settle([{ counter: a.counter, amount: 10, expiresAt: a.expiresAt }, { counter: 'k:elsewhere', amount: 3, expiresAt: 0 }]);
  assert.equal(await store.reserve([a, b]), 0);
  assert.deepEqual(await other.values([a.counter, b.counter, 'k:elsewhere']), [atA + 10, atB, 3]);
  assert.equal(await store.reserve([{ counter: 'k:new', limit: 1e9, amount: 5, expiresAt: 0 }, { ...b, limit: atB }]), 1);
  assert.deepEqual(await other.values(['k:new', b.counter]), [0, atB]);
  store.settle([{ counter: a.counter, amount: -5, expiresAt: a.expiresAt }]);
  assert.equal(await store.reserve([a]), -1);
  assert.deepEqual(await other.values([a.counter]), [atA + 10 - 5 + 10]);
}

/** Queued settlements alone reach the server by the store's timer: wait (at most 10 s) for `counters` to read `want`. */
export async function checkTimerSends(other: KeyStore, counters: string[], want: number[]): Promise<void> {
  const deadline = Date.now() + 10_000;
  while ((await other.values(counters)).some((v, i) => v !== want[i]) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  assert.deepEqual(await other.values(counters), want, 'sent alone by the timer');
}

/**
 * Lazy (lifetime) settlements (ADR 0072, 0091) are summed and ride on a reservation once LAZY_MS old; a read of
 * counters through the store that holds them sees them at once. `store` and `other` share one store.
 */
export async function checkLazySums(store: KeyStore, other: KeyStore): Promise<void> {
  const line = { counter: 'k:a:tokens:day', limit: 1e9, amount: 10, expiresAt: 0 };
  const life = { counter: 'k:a:tokens:total:all', amount: 16, expiresAt: 0, lazy: true };
  for (let i = 0; i < 20; i++) {
    assert.equal(await store.reserve([line]), -1);
    await store.settle([{ counter: line.counter, amount: -4, expiresAt: 0 }, life]);
  }
  assert.equal(await store.reserve([line]), -1);
  assert.deepEqual(await other.values([line.counter, life.counter]), [21 * 10 - 20 * 4, 0], 'settlements rode on the reservations; the lifetime sum is held');
  // LAZY_MS stepped over, not slept out: the sums' age is read from Date.now.
  const clock = steppedClock();
  try {
    clock.step(LAZY_MS + 20);
    assert.equal(await store.reserve([line]), -1);
    assert.deepEqual(await other.values([life.counter]), [20 * 16], 'LAZY_MS old: written once, summed, with the next reservation');
    await store.settle([{ ...life, amount: 5 }]);
    assert.deepEqual(await store.values([life.counter]), [20 * 16 + 5], "the store's own read writes what it holds first");
  } finally {
    clock.restore();
  }
}

/**
 * Settlements split by sign (ADR 0097), seen by another replica (`other`): a charge on a counter no reservation names
 * is written within SETTLE_DELAY_MS (its timer); a refund is not, but rides on the next reservation of its counter; a
 * refund whose counter no reservation names is written by REFUND_HOLD_MS; `values` through the holding store writes
 * held refunds first. */
export async function checkRefundsHeld(store: KeyStore, other: KeyStore): Promise<void> {
  const line = { counter: 'k:held', limit: 1e9, amount: 10, expiresAt: Date.now() + 3_600_000 };
  assert.equal(await store.reserve([line]), -1);
  const at = Date.now();
  store.settle([{ counter: line.counter, amount: -4, expiresAt: line.expiresAt }, { counter: 'k:charged', amount: 3, expiresAt: 0 }]);
  await waitFor(other, ['k:charged'], [3], 'the charge, alone, by its timer');
  // Under load the wait may pass REFUND_HOLD_MS: the refund is then rightly written, and only the rest is checked.
  const held = Date.now() - at < REFUND_HOLD_MS - 100;
  if (held) assert.deepEqual(await other.values([line.counter]), [10], 'the refund is held past SETTLE_DELAY_MS');
  assert.equal(await store.reserve([line]), -1);
  assert.deepEqual(await other.values([line.counter]), [16], 'the refund rode on the reservation of its counter');
  store.settle([{ counter: 'k:alone', amount: -2, expiresAt: 0 }]);
  const alone = Date.now();
  await new Promise((r) => setTimeout(r, SETTLE_DELAY_MS * 3));
  if (Date.now() - alone < REFUND_HOLD_MS - 100) assert.deepEqual(await other.values(['k:alone']), [0], 'held while no reservation names it');
  await waitFor(other, ['k:alone'], [-2], 'written alone once REFUND_HOLD_MS old');
  assert.ok(Date.now() - alone >= REFUND_HOLD_MS - 5, 'not before REFUND_HOLD_MS');
  store.settle([{ counter: line.counter, amount: -1, expiresAt: line.expiresAt }]);
  assert.deepEqual(await store.values([line.counter]), [15], "the holding store's own read writes held refunds first");
  assert.deepEqual(await other.values([line.counter]), [15]);
}

async function waitFor(other: KeyStore, counters: string[], want: number[], what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while ((await other.values(counters)).some((v, i) => v !== want[i]) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
  assert.deepEqual(await other.values(counters), want, what);
}

/**
 * A settlement's lifetime sums found through the memos their deltas carry (ADR 0107): each lifetime counter is looked
 * up in LazySums at its key's first settlement only, also when two keys share their first line (a team budget, whose
 * line cannot keep either key's sums), and the sums still land right after LazySums dropped its entries (past
 * STATES_MAX). `due` (the Redis store: sums come due and ride on reservations) runs after the first settlements with
 * a reservation and a settlement of key `a` to use, and returns how many reservations it made.
 */
export async function checkLazyGroup(
  store: KeyStore,
  due?: (reserve: () => Promise<number>, settle: (n: number) => void) => Promise<number>,
): Promise<void> {
  const line = { counter: 't:team', limit: 1e9, amount: 10, expiresAt: 0 };
  const memos = new Map(['a', 'b'].map((k) => [k, { tokens: {}, usd: {} }]));
  const settleKey = (key: string, n: number): void =>
    void store.settle([
      { counter: 't:team', amount: -1, expiresAt: 0 },
      { counter: `k:${key}:tokens:total:all`, amount: n, expiresAt: 0, lazy: true, memo: memos.get(key)!.tokens },
      { counter: `k:${key}:usd:total:all`, amount: n / 1000, expiresAt: 0, lazy: true, memo: memos.get(key)!.usd },
    ]);
  const settle = (n: number): void => settleKey('a', n);
  const reserve = async (): Promise<number> => store.reserve([line]);
  const entries = (store as unknown as { lazy: { byCounter: Map<string, unknown> } }).lazy.byCounter;
  const lookups = countCalls(entries, 'get');
  for (let i = 1; i <= 3; i++) {
    for (const key of ['a', 'b']) {
      assert.equal(await reserve(), -1);
      settleKey(key, i);
    }
  }
  assert.equal(lookups.n, 4, "each key's two lifetime counters looked up at its first settlement only");
  let reserved = 6 + (due ? await due(reserve, settle) : 0);
  const values = ['t:team', 'k:a:tokens:total:all', 'k:a:usd:total:all', 'k:b:tokens:total:all'];
  assert.deepEqual(await store.values(values), [9 * reserved, 6, 0.006, 6]);
  // STATES_MAX other lifetime sums, written (so none waits), then one more: LazySums drops the entries not waiting.
  store.settle(Array.from({ length: STATES_MAX }, (_, i) => ({ counter: `k:fill${i}:tokens:total:all`, amount: 1, expiresAt: 0, lazy: true })));
  await store.values([]);
  store.settle([{ counter: 'k:other:tokens:total:all', amount: 1, expiresAt: 0, lazy: true }]);
  assert.equal(await reserve(), -1);
  reserved++;
  settle(4);
  assert.deepEqual(await store.values(values), [9 * reserved, 10, 0.01, 6]);
}
