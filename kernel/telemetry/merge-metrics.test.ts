// The supervisor's sum of its workers' /metrics keeps each family's cap (ADR 0130): workers that each saw different
// label sets do not add up to the cap times the workers.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { mergeMetrics } from './merge-metrics.ts';
import { MAX_SERIES_PER_METRIC, MetricsRegistry } from './metrics.ts';

const lines = (text: string, prefix: string): string[] => text.split('\n').filter((l) => l.startsWith(prefix));

/** A worker's text: `count` label sets from `from`, each counted once in a counter and a histogram. */
function worker(from: number, count: number): string {
  const r = new MetricsRegistry();
  const c = r.counter('w_total', 'test');
  const h = r.histogram('w_seconds', 'test', ['tool'], [0.1, 1]);
  for (let i = from; i < from + count; i++) {
    c.inc({ tool: `t${i}` });
    h.observe({ tool: `t${i}` }, 0.5);
  }
  return r.render();
}

describe('mergeMetrics', () => {
  it('sums the series the workers share', () => {
    const merged = mergeMetrics([worker(0, 3), worker(0, 3)]);
    assert.ok(merged.includes('w_total{tool="t1"} 2'));
    assert.ok(merged.includes('w_seconds_bucket{tool="t1",le="1"} 2'));
    assert.ok(merged.includes('w_seconds_count{tool="t1"} 2'));
  });

  it('past the cap, label sets new to the merged family are summed into the overflow series, buckets kept cumulative', () => {
    const merged = mergeMetrics([worker(0, 800), worker(800, 800), worker(1600, 800)]);
    const counters = lines(merged, 'w_total{');
    assert.equal(counters.length, MAX_SERIES_PER_METRIC + 1);
    assert.ok(counters.includes(`w_total{otel_metric_overflow="true"} ${2400 - MAX_SERIES_PER_METRIC}`));
    assert.equal(lines(merged, 'w_seconds_count{').length, MAX_SERIES_PER_METRIC + 1);
    const overflow = 2400 - MAX_SERIES_PER_METRIC;
    assert.ok(merged.includes(`w_seconds_bucket{otel_metric_overflow="true",le="0.1"} 0`));
    assert.ok(merged.includes(`w_seconds_bucket{otel_metric_overflow="true",le="1"} ${overflow}`));
    assert.ok(merged.includes(`w_seconds_bucket{otel_metric_overflow="true",le="+Inf"} ${overflow}`));
    assert.ok(merged.includes(`w_seconds_count{otel_metric_overflow="true"} ${overflow}`));
    // A label set the family already holds keeps counting in its own series.
    const again = mergeMetrics([merged, worker(0, 1)]);
    assert.ok(again.includes('w_total{tool="t0"} 2'));
  });

  it("a worker's own overflow series is summed with the merged one", () => {
    const full = worker(0, MAX_SERIES_PER_METRIC + 10);
    const merged = mergeMetrics([full, worker(5000, 5)]);
    assert.ok(merged.includes('w_total{otel_metric_overflow="true"} 15'), lines(merged, 'w_total{otel').join('\n'));
  });
});
