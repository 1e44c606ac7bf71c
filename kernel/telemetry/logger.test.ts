import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isoNow, LogSink, ProcessLogger } from './logger.ts';
import { fixed2 } from './access-log.ts';
import { MetricsRegistry } from './metrics.ts';

test('isoNow formats the date once per second and matches toISOString at every millisecond', (t) => {
  const times = [0, 1, 9, 10, 99, 100, 999, 1000, 1767225600000, 1767225600007, 1767225600099, 1767225600999, 1767225601000, 1767225661042];
  for (const now of times) {
    t.mock.method(Date, 'now', () => now);
    assert.equal(isoNow(), new Date(now).toISOString(), String(now));
    t.mock.restoreAll();
  }
});

test('fixed2 writes a duration with two decimals, as toFixed(2) does', () => {
  for (const n of [0, 0.001, 0.004, 0.006, 0.5, 0.99, 1, 1.234, 9.996, 10, 123.456, 65_000.1]) assert.equal(fixed2(n), n.toFixed(2), String(n));
  for (let i = 0; i < 10_000; i++) {
    const n = Math.random() * 10 ** (i % 6);
    assert.ok(Math.abs(Number(fixed2(n)) - n) <= 0.005 + 1e-9, `${n} → ${fixed2(n)}`);
    assert.match(fixed2(n), /^\d+\.\d\d$/);
  }
  assert.equal(fixed2(Number.NaN), 'NaN');
});

test('a log sink whose stream does not keep up drops lines past 16 MiB pending, then says how many it dropped', () => {
  const written: string[] = [];
  let pending = 0;
  const sink = new LogSink(undefined, (chunk) => void written.push(chunk.toString()), () => pending);
  const logger = new ProcessLogger(sink, { level: 'info', format: 'json' });
  const droppedOnMetrics = (): number => Number(/^switchyard_log_lines_dropped_total (\S+)$/m.exec(new MetricsRegistry().render())?.[1]);
  const before = droppedOnMetrics();
  logger.info('first');
  sink.flush();
  // The reader stalled (a log shipper stuck, a pipe nobody reads): what waits for it is bounded.
  pending = 16 * 1024 * 1024;
  for (let i = 0; i < 3; i++) {
    logger.info(`lost ${i}`);
    sink.push('{"msg":"request"}\n');
    sink.flush();
  }
  assert.equal(written.length, 1);
  assert.equal(droppedOnMetrics() - before, 6, 'and /metrics counts them');
  pending = 0;
  logger.info('after');
  sink.flush();
  const lines = written.join('').trimEnd().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
  assert.deepEqual(lines.map((l) => l.msg), ['first', 'log lines dropped: the log output did not keep up', 'after']);
  assert.equal(lines[1]!.level, 'warn');
  assert.equal(lines[1]!.dropped, 6);
});
