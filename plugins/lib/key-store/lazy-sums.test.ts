// The lifetime sums (lazy-sums.ts) alone, without a store: entries kept between writes, the waiting order bounded
// (test/helpers/key-store-sums.ts checkLazySums: each store's lifetime counters, against real servers).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LAZY_MS, LazySums } from './lazy-sums.ts';
import { STATES_MAX } from './settlement-queue.ts';

test('lazy sums (ADR 0100): a counter keeps its entry between writes; the waiting order stays bounded; oldest first', (t) => {
  t.mock.timers.enable({ apis: ['setTimeout', 'Date'], now: 0 });
  const lazy = new LazySums(() => undefined);
  const taken = new Map<string, number>();
  for (let round = 0; round < 50; round++) {
    for (let k = 0; k < 1000; k++) lazy.add({ counter: `k:${k}:tokens:total:all`, amount: 2, expiresAt: 0, lazy: true }, Date.now());
    t.mock.timers.tick(LAZY_MS / 2);
    for (let n = 0; n < 200; n++) for (const row of lazy.due(Date.now(), 8) ?? []) taken.set(row.counter, (taken.get(row.counter) ?? 0) + row.amount);
  }
  const order = (lazy as unknown as { order: unknown[] }).order;
  assert.equal(lazy.stateCount, 1000);
  assert.ok(order.length <= 2 * 1024, `${order.length} places for 1,000 counters`);
  for (const row of lazy.all()) taken.set(row.counter, (taken.get(row.counter) ?? 0) + row.amount);
  assert.equal(taken.size, 1000);
  assert.ok([...taken.values()].every((v) => v === 100), 'every amount taken once');
  assert.deepEqual(lazy.all(), []);
});

test('lazy sums (ADR 0177): rows of entries dropped past STATES_MAX are given again; a sum waiting keeps its own', (t) => {
  t.mock.timers.enable({ apis: ['setTimeout', 'Date'], now: 0 });
  const lazy = new LazySums(() => undefined);
  const add = (counter: string, amount: number): void => lazy.add({ counter, amount, expiresAt: 7, lazy: true }, Date.now());
  for (let k = 0; k < STATES_MAX - 1; k++) add(`idle:${k}`, 1);
  t.mock.timers.tick(LAZY_MS);
  let taken = 0;
  lazy.dueEach(Date.now(), STATES_MAX, (_q, amount, expiresAt) => {
    taken += amount;
    assert.equal(expiresAt, 7);
  });
  assert.equal(taken, STATES_MAX - 1, 'each sum taken once, with its expiry');
  add('waiting', 5);
  for (let k = 0; k < 100; k++) add(`new:${k}`, 2);
  assert.ok(lazy.stateCount <= 102, `${lazy.stateCount} entries: the idle ones were dropped`);
  add('waiting', 3);
  const rows = new Map(lazy.all().map((r) => [r.counter, r.amount]));
  assert.equal(rows.get('waiting'), 8, 'the sum waiting through the drop is whole');
  assert.equal(rows.size, 101);
  assert.ok([...rows].every(([c, v]) => c === 'waiting' || v === 2), 'a new entry on a row given again starts from its own amount');
});

test('lazy sums (ADR 0187): a sum its caller held already (`summed`) is due at once, a few at a time; an ordinary one LAZY_MS later', () => {
  const lazy = new LazySums(() => undefined);
  lazy.add({ counter: 'held', amount: 3, expiresAt: 0, lazy: true, summed: true }, 1000);
  lazy.add({ counter: 'held2', amount: 4, expiresAt: 0, lazy: true, summed: true }, 1000);
  lazy.add({ counter: 'fresh', amount: 5, expiresAt: 0, lazy: true }, 1000);
  assert.deepEqual(lazy.due(1000, 1)?.map((r) => [r.counter, r.amount]), [['held', 3]], 'due at once, at most `max`');
  assert.deepEqual(lazy.due(1001, 8)?.map((r) => r.counter), ['held2'], 'the ordinary sum waits');
  assert.deepEqual(lazy.due(1000 + LAZY_MS, 8)?.map((r) => r.counter), ['fresh']);
  lazy.add({ counter: 'fresh', amount: 1, expiresAt: 0, lazy: true }, 7000);
  lazy.add({ counter: 'fresh', amount: 2, expiresAt: 0, lazy: true, summed: true }, 7001);
  assert.equal(lazy.due(7002, 8), undefined, 'a summed part joins a sum already waiting, which keeps its own time');
  assert.deepEqual(lazy.due(7000 + LAZY_MS, 8)?.map((r) => [r.counter, r.amount]), [['fresh', 3]]);
});

test('lazy sums (ADR 0187): an idle store writes a summed sum within LAZY_MS, an ordinary one within 2 x LAZY_MS', (t) => {
  t.mock.timers.enable({ apis: ['setTimeout', 'Date'], now: 0 });
  let idle = 0;
  const lazy = new LazySums(() => void idle++);
  lazy.add({ counter: 'fresh', amount: 1, expiresAt: 0, lazy: true }, Date.now());
  t.mock.timers.tick(1000);
  lazy.add({ counter: 'held', amount: 2, expiresAt: 0, lazy: true, summed: true }, Date.now());
  t.mock.timers.tick(LAZY_MS);
  assert.equal(idle, 1, 'written LAZY_MS after the summed sum came');
  const calm = new LazySums(() => void idle++);
  calm.add({ counter: 'fresh', amount: 1, expiresAt: 0, lazy: true }, Date.now());
  t.mock.timers.tick(2 * LAZY_MS - 1);
  assert.equal(idle, 1);
  t.mock.timers.tick(1);
  assert.equal(idle, 2);
});
