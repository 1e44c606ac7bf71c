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
});
