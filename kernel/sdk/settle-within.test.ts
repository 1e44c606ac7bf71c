import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { settleWithin } from './settle-within.ts';

describe('settleWithin (ADR 0144)', () => {
  it('passes on a value or a rejection that comes first', async () => {
    assert.equal(await settleWithin(Promise.resolve(7), 1000, () => new Error('late')), 7);
    await assert.rejects(settleWithin(Promise.reject(new Error('own')), 1000, () => new Error('late')), /own/);
  });

  it('rejects with what timedOut makes when the promise never settles', async () => {
    const started = performance.now();
    await assert.rejects(settleWithin(new Promise(() => {}), 50, () => new RangeError('did not settle')), RangeError);
    assert.ok(performance.now() - started >= 45);
  });
});
