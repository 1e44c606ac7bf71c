import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { CompiledExpression, Exchange } from 'switchyard/sdk';
import { buildDescriptors, Code, derivedHeaders, mostConstrained, resetSeconds } from './rls.ts';
import type { DescriptorStatus, RateLimitResponse } from './rls.ts';

const value = (v: unknown): CompiledExpression => ({
  source: String(v),
  evaluate: () => {
    if (v instanceof Error) throw v;
    return v;
  },
});
const ex = {} as Exchange;
const status = (code: number, limit: number, remaining: number, reset?: number): DescriptorStatus => ({
  code,
  current_limit: { requests_per_unit: limit, unit: 2 },
  limit_remaining: remaining,
  duration_until_reset: reset === undefined ? null : { seconds: String(reset), nanos: 0 },
});

describe('remoteRateLimit descriptors', () => {
  it('turns values into strings and drops a descriptor with a failing, null or empty entry', () => {
    const out = buildDescriptors(
      [
        { entries: [{ key: 'a', value: value('x') }, { key: 'n', value: value(7n) }] },
        { entries: [{ key: 'b', value: value(new Error('no such key')) }] },
        { entries: [{ key: 'c', value: value(null) }] },
        { entries: [{ key: 'd', value: value('') }] },
        { entries: [{ key: 'e', value: value(true) }] },
      ],
      ex,
    );
    assert.deepEqual(out, [{ entries: [{ key: 'a', value: 'x' }, { key: 'n', value: '7' }] }, { entries: [{ key: 'e', value: 'true' }] }]);
  });
});

describe('remoteRateLimit headers (DECIDED 10)', () => {
  it('picks the over-limit status, then the fewest remaining, then the longest wait', () => {
    const s = [status(Code.OK, 100, 0, 5), status(Code.OVER_LIMIT, 10, 0, 30), status(Code.OVER_LIMIT, 5, 0, 50)];
    assert.equal(mostConstrained(s, true), s[2]);
    assert.equal(mostConstrained([status(Code.OK, 100, 50), status(Code.OK, 10, 3)], false)?.current_limit?.requests_per_unit, 10);
    assert.equal(mostConstrained([{ ...status(Code.OK, 1, 1), current_limit: null }], false), undefined);
  });

  it('derives the reset from the unit when the service sends no duration', () => {
    const s = status(Code.OK, 10, 5);
    assert.equal(resetSeconds(s, Date.UTC(2024, 0, 1, 0, 0, 45)), 15, 'minute window: 15s left at :45');
    assert.equal(resetSeconds({ ...s, duration_until_reset: { seconds: '1', nanos: 500_000_000 } }), 2, 'rounded up');
  });

  it('adds only the headers the service did not send; Retry-After only on denial', () => {
    const res = { overall_code: Code.OVER_LIMIT, statuses: [status(Code.OVER_LIMIT, 3, 0, 42)] } as RateLimitResponse;
    assert.deepEqual(derivedHeaders(res, true, new Set()), [
      ['x-ratelimit-limit', '3'],
      ['x-ratelimit-remaining', '0'],
      ['x-ratelimit-reset', '42'],
      ['retry-after', '42'],
    ]);
    assert.deepEqual(
      derivedHeaders(res, true, new Set(['x-ratelimit-limit', 'retry-after'])).map(([n]) => n),
      ['x-ratelimit-remaining', 'x-ratelimit-reset'],
    );
    assert.deepEqual(derivedHeaders({ ...res, overall_code: Code.OK }, false, new Set()).map(([n]) => n), ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset']);
  });
});
