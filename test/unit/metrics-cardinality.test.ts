// Bounded label cardinality (issue 12 item 2, ADR 0130): past 1000 label sets a metric counts the rest in one overflow
// series, marked as the OTel SDK marks it (`otel_metric_overflow="true"`).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MAX_LABEL_VALUE, MAX_SERIES_PER_METRIC, MetricsRegistry } from '../../kernel/telemetry/metrics.ts';

const lines = (text: string, prefix: string): string[] => text.split('\n').filter((l) => l.startsWith(prefix));

describe('metric label cardinality', () => {
  it('caps histogram series at 1000 label sets, then observes into the overflow series', () => {
    const r = new MetricsRegistry();
    const h = r.histogram('t_seconds', 'test', ['target', 'tool'], [1, 2]);
    for (let i = 0; i < MAX_SERIES_PER_METRIC + 50; i++) h.observe({ target: 't', tool: `tool${i}` }, 0.5);
    const text = r.render();
    const counts = lines(text, 't_seconds_count{');
    assert.equal(counts.length, MAX_SERIES_PER_METRIC + 1);
    assert.ok(counts.includes('t_seconds_count{otel_metric_overflow="true"} 50'));
    assert.ok(text.includes('t_seconds_bucket{otel_metric_overflow="true",le="1"} 50'));
    assert.ok(counts.includes('t_seconds_count{target="t",tool="tool0"} 1'));
    // An existing series keeps counting after the cap.
    h.observe({ target: 't', tool: 'tool0' }, 1.5);
    assert.ok(r.render().includes('t_seconds_bucket{target="t",tool="tool0",le="2"} 2'));
  });

  it('cuts a label value past MAX_LABEL_VALUE characters: a client-sized name does not make a client-sized series', () => {
    const r = new MetricsRegistry();
    const c = r.counter('n_total', 'test');
    const h = r.histogram('n_seconds', 'test', ['tool'], [1]);
    const long = 'x'.repeat(1_000_000);
    c.inc({ model: long });
    c.child({ model: `${long}y` }).inc();
    h.observe({ tool: long }, 0.5);
    const text = r.render();
    const cut = `${'x'.repeat(MAX_LABEL_VALUE)}...`;
    assert.ok(text.includes(`n_total{model="${cut}"} 2`), 'both long names share the cut series');
    assert.ok(text.includes(`n_seconds_count{tool="${cut}"} 1`));
    assert.ok(text.length < 4 * MAX_LABEL_VALUE + 1000, `${text.length} characters rendered`);
  });

  it('a client inventing 5,000 long values for one label grows neither the series count nor the text past the cap', () => {
    const r = new MetricsRegistry();
    const h = r.histogram('g_seconds', 'test', ['model'], [0.01, 0.1, 1, 10]);
    const c = r.counter('g_total', 'test');
    for (let i = 0; i < 5000; i++) {
      const model = `${i}-${'m'.repeat(300)}`;
      h.observe({ model }, 0.05);
      c.inc({ model });
    }
    const text = r.render();
    assert.equal(lines(text, 'g_seconds_count{').length, MAX_SERIES_PER_METRIC + 1);
    assert.equal(lines(text, 'g_total{').length, MAX_SERIES_PER_METRIC + 1);
    assert.ok(text.includes('g_seconds_count{otel_metric_overflow="true"} 4000'));
    assert.ok(text.includes('g_total{otel_metric_overflow="true"} 4000'));
    // Each series line holds at most one cut value: the text is bounded by the cap, not by the client.
    const perSeries = 8 * (MAX_LABEL_VALUE + 80);
    assert.ok(text.length < (MAX_SERIES_PER_METRIC + 1) * perSeries, `${text.length} characters`);
  });

  it('caps counter series the same way', () => {
    const r = new MetricsRegistry();
    const c = r.counter('t_total', 'test');
    for (let i = 0; i < MAX_SERIES_PER_METRIC + 3; i++) c.inc({ model: `m${i}` });
    const series = lines(r.render(), 't_total{');
    assert.equal(series.length, MAX_SERIES_PER_METRIC + 1);
    assert.ok(series.includes('t_total{otel_metric_overflow="true"} 3'));
  });

  it('a counter child is one series: shown from its first inc, shared with inc(labels) and other children of its labels, capped like them', () => {
    const r = new MetricsRegistry();
    const c = r.counter('k_total', 'test');
    const a = c.child({ key: 'a' });
    assert.deepEqual(lines(r.render(), 'k_total{'), [], 'no series before something is counted');
    a.inc(2);
    c.inc({ key: 'a' }, 3);
    const again = c.child({ key: 'a' });
    again.inc();
    a.inc(0.5);
    c.inc({ key: 'b' });
    const b = c.child({ key: 'b' });
    b.inc(4);
    assert.deepEqual(lines(r.render(), 'k_total{').sort(), ['k_total{key="a"} 6.5', 'k_total{key="b"} 5']);
    // Children handed out before the cap was reached and counted after it are bounded too.
    const early = Array.from({ length: MAX_SERIES_PER_METRIC + 5 }, (_, i) => c.child({ key: `k${i}` }));
    for (const child of early) child.inc();
    const series = lines(r.render(), 'k_total{');
    assert.equal(series.length, MAX_SERIES_PER_METRIC + 1);
    assert.ok(series.includes('k_total{otel_metric_overflow="true"} 7'), 'children past the cap count in the overflow series');
  });

  it('a counter only goes up: a negative, NaN or infinite increment (a provider reporting -500 tokens, a negative cost) is not counted', () => {
    const r = new MetricsRegistry();
    const c = r.counter('u_total', 'test');
    const child = c.child({ kind: 'child' });
    for (const by of [3, -500, Number.NaN, Infinity, -Infinity, 0.5]) {
      c.inc({ kind: 'labels' }, by);
      child.inc(by);
    }
    assert.deepEqual(lines(r.render(), 'u_total{').sort(), ['u_total{kind="child"} 3.5', 'u_total{kind="labels"} 3.5']);
    // A histogram keeps negative observations (a valid measurement), not NaN or infinities, which would stay in its sum.
    const h = r.histogram('v_seconds', 'test', [], [1]).child();
    h.observe(Number.NaN);
    h.observe(Infinity);
    h.observe(0.5);
    assert.ok(r.render().includes('v_seconds_sum 0.5'), r.render());
    assert.ok(r.render().includes('v_seconds_count 1'));
  });

  it('escapes label values and renders cumulative buckets', () => {
    const r = new MetricsRegistry();
    const child = r.histogram('e_seconds', 'test', ['backend'], [0.1, 1]).child('a"b\\c');
    child.observe(0.05);
    child.observe(0.5);
    child.observe(5);
    const text = r.render();
    assert.ok(text.includes('# TYPE e_seconds histogram'));
    assert.ok(text.includes('e_seconds_bucket{backend="a\\"b\\\\c",le="0.1"} 1'));
    assert.ok(text.includes('e_seconds_bucket{backend="a\\"b\\\\c",le="1"} 2'));
    assert.ok(text.includes('e_seconds_bucket{backend="a\\"b\\\\c",le="+Inf"} 3'));
    assert.ok(text.includes('e_seconds_count{backend="a\\"b\\\\c"} 3'));
  });
});
