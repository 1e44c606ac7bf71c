import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isoNow } from './logger.ts';
import { fixed2 } from './access-log.ts';

test('isoNow formats the date once per second and matches toISOString at every millisecond', (t) => {
  const times = [0, 1, 9, 10, 99, 100, 999, 1000, 1767225600000, 1767225600007, 1767225600099, 1767225600999, 1767225601000, 1767225661042];
  for (const now of times) {
    t.mock.method(Date, 'now', () => now);
    assert.equal(isoNow(), new Date(now).toISOString(), String(now));
    t.mock.restoreAll();
  }
});

test('fixed2 writes a duration with two decimals, as toFixed(2) does', () => {
  for (const n of [0, 0.001, 0.004, 0.006, 0.5, 0.99, 1, 1.234, 9.996, 10, 123.456, 65_000.1]) assert.equal(fixed2(n), n.toFixed(2), String(n));
  for (let i = 0; i < 10_000; i++) {
    const n = Math.random() * 10 ** (i % 6);
    assert.ok(Math.abs(Number(fixed2(n)) - n) <= 0.005 + 1e-9, `${n} → ${fixed2(n)}`);
    assert.match(fixed2(n), /^\d+\.\d\d$/);
  }
  assert.equal(fixed2(Number.NaN), 'NaN');
});
