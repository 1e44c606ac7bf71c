import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { TestContext } from 'node:test';
import { CounterState, REFUND_HOLD_MS, SETTLE_DELAY_MS, SettlementQueue, STATES_MAX } from './settlement-queue.ts';
import type { CounterDelta } from './types.ts';

const d = (counter: string, amount: number, expiresAt = 0) => ({ counter, amount, expiresAt });

test('settlement queue: sums by counter in queued order, past 16 counters too; reused after clear without mixing', () => {
  let due = 0;
  const q = new SettlementQueue(() => due++);
  try {
    q.add([d('a', 1), d('b', 2, 5)]);
    q.add([d('a', 3), d('b', -1, 7)]);
    assert.equal(q.size, 2);
    assert.deepEqual([q.at(0), q.at(1)].map(({ counter, amount, expiresAt }) => ({ counter, amount, expiresAt })), [d('a', 4), d('b', 1, 7)]);
    assert.equal(q.amountOf('a'), 4);
    assert.equal(q.amountOf('zz'), 0);
    assert.equal(q.has('b'), true);
    // Past 16 counters the queue looks them up through an index: same answers.
    const many = Array.from({ length: 40 }, (_, i) => d(`c${i}`, i + 1));
    q.add(many);
    q.add(many);
    assert.equal(q.size, 42);
    assert.equal(q.amountOf('c39'), 80);
    assert.equal(q.amountOf('a'), 4);
    const rows = q.rows();
    assert.deepEqual(rows.slice(0, 3), [d('a', 4), d('b', 1, 7), d('c0', 2)]);
    q.clear();
    assert.equal(q.size, 0);
    assert.equal(q.amountOf('c39'), 0, 'nothing survives a clear, whether it was indexed or not');
    assert.deepEqual(rows[41], d('c39', 80), 'rows are copies: the reused entries do not change them');
    q.add([d('c39', 1), d('x', 2)]);
    assert.deepEqual(q.rows(), [d('c39', 1), d('x', 2)]);
    assert.equal(q.amountOf('a'), 0);
  } finally {
    q.clear();
  }
  assert.equal(due, 0);
});

/** A queue on mocked timers and clock (from 0): `due` counts the timer's calls, each writing the due list. */
function timedQueue(t: TestContext): { q: SettlementQueue; written: CounterDelta[][]; tick: (ms: number) => void } {
  t.mock.timers.enable({ apis: ['setTimeout', 'Date'], now: 0 });
  const written: CounterDelta[][] = [];
  const q = new SettlementQueue(() => {
    written.push(q.rows());
    q.clear();
  });
  return { q, written, tick: (ms) => t.mock.timers.tick(ms) };
}

test('settlement queue (ADR 0097): a charge is written within SETTLE_DELAY_MS; a refund is held up to REFUND_HOLD_MS, then written', (t) => {
  const { q, written, tick } = timedQueue(t);
  q.add([d('k:charge', 3), d('k:refund', -4)]);
  assert.equal(q.size, 1, 'the charge is due');
  assert.equal(q.heldCount, 1, 'the refund is held');
  tick(SETTLE_DELAY_MS);
  assert.deepEqual(written, [[d('k:charge', 3)]], 'the charge alone, within SETTLE_DELAY_MS');
  tick(REFUND_HOLD_MS - SETTLE_DELAY_MS - 1);
  assert.equal(written.length, 1, 'the refund is still held just before REFUND_HOLD_MS');
  assert.equal(q.heldOf('k:refund'), -4);
  tick(1);
  assert.deepEqual(written, [[d('k:charge', 3)], [d('k:refund', -4)]], 'written alone once REFUND_HOLD_MS old');
  assert.equal(q.heldCount, 0);
  tick(10 * REFUND_HOLD_MS);
  assert.equal(written.length, 2, 'nothing more to write');
});

test('settlement queue (ADR 0097): a held refund joins the write that claims its counter; sums by counter keep the sign rule', (t) => {
  const { q, written, tick } = timedQueue(t);
  q.add([d('k:a', -4, 5), d('k:b', -1)]);
  tick(500);
  q.claim('k:a');
  q.claim('k:none');
  assert.deepEqual(q.rows(), [d('k:a', -4, 5)], 'the claimed refund is due, with its expiry; the other stays held');
  q.clear();
  assert.equal(q.heldOf('k:b'), -1);
  // A charge on a counter with a held refund is summed into it: still a refund while the sum is not above 0.
  q.add([d('k:b', 0.5)]);
  tick(SETTLE_DELAY_MS);
  assert.deepEqual(written, [], 'a charge the held refund covers is not written by itself');
  assert.equal(q.heldOf('k:b'), -0.5);
  q.add([d('k:b', 2)]);
  assert.equal(q.heldCount, 0, 'the sum went above 0: a charge, due');
  tick(SETTLE_DELAY_MS);
  assert.deepEqual(written, [[d('k:b', 1.5)]]);
  // A refund on a counter already due is summed there (it goes with that write).
  q.add([d('k:c', 5)]);
  q.add([d('k:c', -7)]);
  assert.deepEqual([q.size, q.heldCount], [1, 0]);
  tick(SETTLE_DELAY_MS);
  assert.deepEqual(written[1], [d('k:c', -2)]);
});

test('settlement queue (ADR 0097): ripe refunds ride on the next write, claimAll takes every one; a charge brings the held timer forward', (t) => {
  const { q, written, tick } = timedQueue(t);
  q.add([d('k:old', -1)]);
  tick(600);
  q.add([d('k:young', -2)]);
  tick(REFUND_HOLD_MS - 600 - 1);
  assert.equal(q.ripen(Date.now()), false);
  // A reservation made as the refund turns REFUND_HOLD_MS old takes it (just before the timer would write it alone).
  assert.equal(q.ripen(Date.now() + 1), true);
  assert.deepEqual(q.rows(), [d('k:old', -1)]);
  q.clear();
  assert.equal(written.length, 0);
  // The timer then waits for the younger refund: a charge queued meanwhile is not kept waiting for it.
  q.add([d('k:now', 1)]);
  tick(SETTLE_DELAY_MS);
  assert.deepEqual(written, [[d('k:now', 1)]]);
  q.add([d('k:x', -3)]);
  q.claimAll();
  assert.deepEqual(q.rows(), [d('k:young', -2), d('k:x', -3)], 'every held refund, oldest first');
  q.clear();
  assert.equal(q.heldCount, 0);
  tick(10 * REFUND_HOLD_MS);
  assert.equal(written.length, 1);
  // With only a refund held the timer is REFUND_HOLD_MS away; a charge queued then is still written within SETTLE_DELAY_MS.
  q.add([d('k:held', -1)]);
  tick(100);
  q.add([d('k:late', 2)]);
  tick(SETTLE_DELAY_MS);
  assert.deepEqual(written[1], [d('k:late', 2)]);
  assert.equal(q.heldOf('k:held'), -1);
});

/** The queue's arrays, to check their bounds (private: read only here). */
const insides = (q: SettlementQueue): { list: unknown[]; heldOrder: unknown[] } => q as unknown as { list: unknown[]; heldOrder: unknown[] };

test('settlement queue (ADR 0100): 1,000 counters held and claimed in turn keep one state each; the held order stays bounded', (t) => {
  const { q, written, tick } = timedQueue(t);
  const counters = Array.from({ length: 1000 }, (_, i) => `k:${i}`);
  for (let round = 0; round < 30; round++) {
    for (const c of counters) {
      // The key's next reservation claims its held refund; the answer's refund is held again.
      q.claimFor([{ counter: c }], Date.now());
      q.clear();
      q.addOne(d(c, -1));
    }
    tick(10);
  }
  assert.equal(q.heldCount, 1000);
  assert.equal(q.stateCount, 1000, 'one state per counter, reused');
  assert.ok(insides(q).heldOrder.length <= 2 * 1024, `held order ${insides(q).heldOrder.length} places for 1,000 held refunds`);
  assert.equal(written.length, 0);
});

test('settlement queue (ADR 0100): ripening skips the places counters left; a counter held again keeps its new place', (t) => {
  const r = timedQueue(t);
  // Hold a, b, c; b is claimed and c turns into a charge; only a ripens, at its own time.
  r.q.addOne(d('a', -1));
  r.tick(10);
  r.q.addOne(d('b', -1));
  r.q.addOne(d('c', -1));
  r.q.claim('b');
  r.q.addOne(d('c', 3));
  r.tick(SETTLE_DELAY_MS);
  assert.deepEqual(r.written, [[d('b', -1), d('c', 2)]]);
  r.q.addOne(d('b', -5));
  r.tick(REFUND_HOLD_MS - 10 - SETTLE_DELAY_MS);
  assert.deepEqual(r.written[1], [d('a', -1)], 'a ripens REFUND_HOLD_MS after it was held');
  assert.equal(r.q.heldOf('b'), -5, 'b, held again later, keeps its new place');
  r.tick(10 + SETTLE_DELAY_MS);
  assert.deepEqual(r.written.slice(2), [[d('b', -5)]]);
  assert.equal(r.q.heldCount, 0);
});

test('settlement queue (ADR 0100): idle counter states are dropped past STATES_MAX, a held one never', (t) => {
  const { q, written } = timedQueue(t);
  q.addOne(d('held', -1));
  for (let i = 0; i < STATES_MAX + 100; i++) {
    q.addOne(d(`c${i}`, 1));
    if (i % 7 === 0) q.clear();
  }
  q.clear();
  assert.ok(q.stateCount <= STATES_MAX, `${q.stateCount} states`);
  assert.equal(q.heldOf('held'), -1);
  q.addOne(d('c1', 2));
  assert.deepEqual(q.rows(), [d('c1', 2)], 'a counter dropped and seen again starts afresh');
  q.clear();
  assert.ok(insides(q).list.length <= 1024);
  assert.equal(written.length, 0);
});

test("settlement queue (ADR 0102): a store's own state per counter; stateFor finds it once for a line's claim and place, never drops states (trim does)", (t) => {
  t.mock.timers.enable({ apis: ['setTimeout', 'Date'], now: 0 });
  class Placed extends CounterState {
    place = 0;
  }
  const q = new SettlementQueue<Placed>(() => undefined, (counter) => new Placed(counter));
  q.addOne(d('a', -2));
  q.addOne(d('b', 3));
  const a = q.stateFor('a');
  assert.ok(a instanceof Placed);
  assert.equal(q.stateFor('a'), a, 'one state per counter');
  a.place = 7;
  q.claimState(a, Date.now());
  assert.equal(q.heldCount, 0, "a line's claim releases the held refund");
  assert.deepEqual([q.at(0), q.at(1)].map((s) => [s.counter, s.amount, s.place]), [['b', 3, 0], ['a', -2, 7]], 'due entries are the states themselves');
  q.claimState(q.stateFor('new'), Date.now());
  assert.equal(q.size, 2, 'claiming a counter with nothing held queues nothing');
  q.clear();
  for (let i = 0; i < STATES_MAX + 10; i++) q.stateFor(`s${i}`);
  assert.equal(q.stateFor('a'), a, 'stateFor keeps every state, past STATES_MAX too (a store numbering the states of a write relies on it)');
  assert.equal(q.stateCount, STATES_MAX + 13);
  q.trim();
  assert.equal(q.stateCount, 0, 'trim drops the idle states past STATES_MAX');
  assert.notEqual(q.stateFor('a'), a);
});

test('settlement queue (ADR 0108, 0110): a memo finds a state without a lookup until a trim; another counter is looked up; a pinned state survives a trim', () => {
  const q = new SettlementQueue(() => undefined);
  const map = (q as unknown as { states: Map<string, CounterState> }).states;
  const get = map.get.bind(map);
  let lookups = 0;
  map.get = (k: string) => (lookups++, get(k));
  const memo = {};
  const a = q.stateFor('a', memo);
  assert.equal(lookups, 1);
  assert.equal(q.stateFor('a', memo), a, 'through the memo');
  assert.equal(q.settling('a', memo), a);
  assert.equal(lookups, 1);
  assert.notEqual(q.settling('b', memo), a, 'a memo of another counter is not used');
  assert.equal(lookups, 2);
  const pinned = q.stateFor('pinned');
  pinned.pinned = true;
  for (let i = 0; i < STATES_MAX; i++) q.stateFor(`s${i}`);
  const before = q.stateFor('a', memo);
  q.trim();
  const n = lookups;
  assert.notEqual(q.stateFor('a', memo), before, 'after a trim the memo is not used: the state was dropped and made anew');
  assert.equal(lookups, n + 1);
  assert.equal(q.stateFor('pinned'), pinned, 'a pinned state (an open lease) is kept');
});
