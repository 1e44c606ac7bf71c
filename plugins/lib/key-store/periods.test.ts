import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { windowOf } from './periods.ts';

describe('budget windows (UTC calendar)', () => {
  const at = Date.UTC(2026, 10, 30, 23, 59, 30); // 2026-11-30T23:59:30Z

  it('tags and ends each period on UTC boundaries, months rolling into the next year', () => {
    assert.deepEqual(windowOf('minute', at), { tag: '2026-11-30T23:59', endsAt: Date.UTC(2026, 11, 1, 0, 0) });
    assert.deepEqual(windowOf('hour', at), { tag: '2026-11-30T23', endsAt: Date.UTC(2026, 11, 1, 0) });
    assert.deepEqual(windowOf('day', at), { tag: '2026-11-30', endsAt: Date.UTC(2026, 11, 1) });
    assert.deepEqual(windowOf('month', at), { tag: '2026-11', endsAt: Date.UTC(2026, 11, 1) });
    assert.deepEqual(windowOf('month', Date.UTC(2026, 11, 31, 12)), { tag: '2026-12', endsAt: Date.UTC(2027, 0, 1) });
    assert.deepEqual(windowOf('total', at), { tag: 'all', endsAt: 0 });
  });

  it('a window computed once is reused within it and replaced at its boundary, also going back in time', () => {
    const first = windowOf('day', at);
    assert.equal(windowOf('day', at + 20_000), first, 'the same window object inside the day');
    assert.deepEqual(windowOf('day', at + 60_000), { tag: '2026-12-01', endsAt: Date.UTC(2026, 11, 2) });
    assert.deepEqual(windowOf('day', at), { tag: '2026-11-30', endsAt: Date.UTC(2026, 11, 1) });
    assert.deepEqual(windowOf('minute', at + 30_000), { tag: '2026-12-01T00:00', endsAt: Date.UTC(2026, 11, 1, 0, 1) });
    assert.deepEqual(windowOf('minute', at + 29_999), { tag: '2026-11-30T23:59', endsAt: Date.UTC(2026, 11, 1, 0, 0) });
  });
});
