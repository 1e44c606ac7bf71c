import assert from 'node:assert/strict';
import { it } from 'node:test';
import { TokenBucket } from './token-bucket.ts';

it('starts full, empties, then refills discretely per interval up to the cap', () => {
  const b = new TokenBucket(3, 1, 1000, 0);
  assert.equal(b.tryTake(1, 0), true);
  assert.equal(b.tryTake(1, 0), true);
  assert.equal(b.tryTake(1, 0), true);
  assert.equal(b.tryTake(1, 999), false, 'no partial refill before the interval ends');
  assert.equal(b.resetSeconds(999), 1);
  assert.equal(b.tryTake(1, 1000), true, 'one token after one interval');
  assert.equal(b.tryTake(1, 1000), false);
  assert.equal(b.remaining(10_000), 3, 'capped at maxTokens');
});

it('drain never goes below zero', () => {
  const b = new TokenBucket(5, 5, 1000, 0);
  b.drain(50, 0);
  assert.equal(b.remaining(0), 0);
  assert.equal(b.remaining(1000), 5);
});

it('a wall clock stepped back re-anchors the refills instead of stopping them for the size of the step', () => {
  // An hour back (NTP, a resumed VM): the next refill was an hour and an interval away, every request 429 meanwhile.
  const hour = 3_600_000;
  const b = new TokenBucket(1, 1, 1000, hour);
  assert.equal(b.tryTake(1, hour), true);
  assert.equal(b.tryTake(1, 10), false);
  assert.equal(b.resetSeconds(10), 1, 'the next refill is one interval away, not an hour');
  assert.equal(b.tryTake(1, 1010), true, 'refilled one interval after the step');
});
