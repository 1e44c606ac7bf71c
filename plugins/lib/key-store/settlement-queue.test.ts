import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SettlementQueue } from './settlement-queue.ts';

const d = (counter: string, amount: number, expiresAt = 0) => ({ counter, amount, expiresAt });

test('settlement queue: sums by counter in queued order, past 16 counters too; reused after clear without mixing', () => {
  let due = 0;
  const q = new SettlementQueue(() => due++);
  try {
    q.add([d('a', 1), d('b', 2, 5)]);
    q.add([d('a', 3), d('b', -1, 7)]);
    assert.equal(q.size, 2);
    assert.deepEqual([q.at(0), q.at(1)].map((e) => ({ ...e })), [d('a', 4), d('b', 1, 7)]);
    assert.equal(q.amountOf('a'), 4);
    assert.equal(q.amountOf('zz'), 0);
    assert.equal(q.has('b'), true);
    // Past 16 counters the queue looks them up through an index: same answers.
    const many = Array.from({ length: 40 }, (_, i) => d(`c${i}`, i));
    q.add(many);
    q.add(many);
    assert.equal(q.size, 42);
    assert.equal(q.amountOf('c39'), 78);
    assert.equal(q.amountOf('a'), 4);
    const rows = q.rows();
    assert.deepEqual(rows.slice(0, 3), [d('a', 4), d('b', 1, 7), d('c0', 0)]);
    q.clear();
    assert.equal(q.size, 0);
    assert.equal(q.amountOf('c39'), 0, 'nothing survives a clear, whether it was indexed or not');
    assert.deepEqual(rows[41], d('c39', 78), 'rows are copies: the reused entries do not change them');
    q.add([d('c39', 1), d('x', 2)]);
    assert.deepEqual(q.rows(), [d('c39', 1), d('x', 2)]);
    assert.equal(q.amountOf('a'), 0);
  } finally {
    q.clear();
  }
  assert.equal(due, 0);
});
