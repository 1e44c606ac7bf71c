// Outlier detection bookkeeping (ADR 0023): growing and capped ejection times, the max-ejection rule with flapping
// backends, and return to rotation.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Logger, OutlierDetectionFacet } from '../sdk/index.ts';
import { BackendHealth, RouteHealth } from './backend-health.ts';

const lines: string[] = [];
const logger = {
  warn: (m: string) => lines.push(m),
  info: () => undefined,
  debug: () => undefined,
  error: () => undefined,
  child: () => logger,
  isEnabled: () => true,
} as unknown as Logger;

function route(n: number, outlier: Partial<OutlierDetectionFacet> = {}) {
  const o: OutlierDetectionFacet = { consecutive5xx: 1, consecutiveGatewayFailure: 1, baseEjectionMs: 100, maxEjectionMs: 250, maxEjectionPercent: 50, ...outlier };
  const members = Array.from({ length: n }, (_, i) => ({ health: new BackendHealth(), outlier: o, label: `b${i}` }));
  const counts: string[] = [];
  const rh = new RouteHealth(members, 'r', logger, { inc: (labels) => counts.push(`${labels!.backend}:${labels!.reason}`) });
  return { rh, members, counts };
}

/** Let member i's ejection run out. */
const expire = (m: { health: BackendHealth }) => (m.health.ejectedUntil = 1);

describe('RouteHealth', () => {
  it('ejects after the configured failures in a row, and a success resets the count', () => {
    const { rh, members, counts } = route(4, { consecutive5xx: 3, consecutiveGatewayFailure: 10 });
    rh.failure(0, false);
    rh.failure(0, false);
    rh.success(0);
    rh.failure(0, false);
    rh.failure(0, false);
    assert.ok(rh.available(0, performance.now()));
    rh.failure(0, false);
    assert.ok(!rh.available(0, performance.now()));
    assert.deepEqual(counts, ['b0:consecutive5xx']);
    assert.ok(members[0]!.health.ejectedUntil > 0);
  });

  it('a flapping backend is ejected for longer each time, capped by maxEjectionTime, and never pins the route', () => {
    const { rh, members, counts } = route(2);
    const lengths: number[] = [];
    for (let i = 0; i < 4; i++) {
      const before = performance.now();
      rh.failure(0, true);
      lengths.push(Math.round((members[0]!.health.ejectedUntil - before) / 50) * 50);
      // While b0 is out, b1 failing too is not ejected: 1 of 2 out is already 50%.
      rh.failure(1, true);
      assert.ok(rh.available(1, performance.now()), 'the other backend stays in rotation');
      expire(members[0]!);
      assert.ok(rh.available(0, performance.now()), 'back after its ejection time');
    }
    assert.deepEqual(lengths, [100, 200, 250, 250]);
    assert.deepEqual(counts, ['b0:consecutiveGatewayFailure', 'b0:consecutiveGatewayFailure', 'b0:consecutiveGatewayFailure', 'b0:consecutiveGatewayFailure']);
    assert.ok(lines.includes('backend returned to rotation'));
  });

  it('ejects one backend of two with the default 10% (the share already out is compared), none with 0%', () => {
    const ten = route(2, { maxEjectionPercent: 10 });
    ten.rh.failure(0, true);
    ten.rh.failure(1, true);
    assert.deepEqual(ten.counts, ['b0:consecutiveGatewayFailure']);
    const zero = route(2, { maxEjectionPercent: 0 });
    zero.rh.failure(0, true);
    assert.deepEqual(zero.counts, []);
  });
});
