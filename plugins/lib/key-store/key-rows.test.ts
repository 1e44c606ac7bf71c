import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FloatRows } from './key-rows.ts';

test('float rows: given in order, a freed row given again first with its numbers 0, kept numbers survive a grow', () => {
  const rows = new FloatRows(3, 2);
  assert.deepEqual([rows.give(), rows.give()], [0, 1]);
  rows.nums.set([1, 2, 3, 4, 5, 6]);
  rows.free(0);
  assert.equal(rows.give(), 0);
  assert.deepEqual([...rows.nums.subarray(0, 6)], [0, 0, 0, 4, 5, 6]);
  assert.equal(rows.give(), 2);
  assert.equal(rows.nums.length, 12, 'doubled');
  assert.deepEqual([...rows.nums.subarray(3, 9)], [4, 5, 6, 0, 0, 0]);
  rows.nums.fill(7);
  rows.clear();
  assert.equal(rows.give(), 0);
  assert.deepEqual([...rows.nums.subarray(0, 3)], [0, 0, 0], 'a row given after a clear is 0');
});
