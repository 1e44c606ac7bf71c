// MetricCounter.beforeScrape (ADR 0177): a plugin that sums many series' increments in place (the virtual keys' costs)
// bumps them just before `/metrics` is rendered; a failing hook leaves the page and the series as they were.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { MetricsRegistry } from '../../kernel/telemetry/metrics.ts';

it('a counter\'s scrape hooks run before it is rendered, until removed; one that throws does not take the page down', () => {
  const r = new MetricsRegistry();
  const c = r.counter('t_usd_total', 'test');
  const series = c.child({ key: 'a' });
  let waiting = 0.25;
  const remove = c.beforeScrape(() => {
    series.inc(waiting);
    waiting = 0;
  });
  const broken = c.beforeScrape(() => {
    throw new Error('hook failed');
  });
  assert.match(r.render(), /^t_usd_total\{key="a"\} 0\.25$/m, 'the hook bumped the series before the page showed it');
  waiting = 0.5;
  broken();
  remove();
  assert.match(r.render(), /^t_usd_total\{key="a"\} 0\.25$/m, 'a removed hook runs no more');
});
