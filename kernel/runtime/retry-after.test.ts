// `Retry-After` as failover's cooldown reads it (ADR 0039, ADR 0199): delay-seconds or an HTTP-date; anything else
// is unreadable (the short failure cooldown applies), never a date V8's lenient parser makes up.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { retryAfterMs } from './failover.ts';

describe('retryAfterMs', () => {
  it('reads delay-seconds and the three HTTP-date forms', () => {
    assert.equal(retryAfterMs('30'), 30_000);
    assert.equal(retryAfterMs(' 7 '), 7_000);
    assert.equal(retryAfterMs(['2', '9']), 2_000);
    const at = new Date(Date.now() + 60_000);
    for (const form of [at.toUTCString(), at.toUTCString().replace(/^(\w+), (\d+) (\w+) (\d\d)(\d\d) /, (_m, d, n, mo, _c, yy) => `${d}day, ${n}-${mo}-${yy} `)]) {
      const ms = retryAfterMs(form);
      assert.ok(ms !== undefined && ms > 50_000 && ms <= 60_000, `${form}: ${ms}`);
    }
    assert.equal(retryAfterMs('Sun, 06 Nov 1994 08:49:37 GMT'), 0);
  });

  it('fractional seconds are read as seconds, not as a date in 2001 (which meant no cooldown at all)', () => {
    assert.equal(retryAfterMs('1.5'), 1_500);
    assert.equal(retryAfterMs('0.25'), 250);
  });

  it('negative, bare or garbled values are unreadable, not a past date', () => {
    for (const v of ['-5', '5 minutes', '1e3', '0x10', 'soon', '', '2 3', 'Infinity', 'NaN']) assert.equal(retryAfterMs(v), undefined, v);
  });
});
