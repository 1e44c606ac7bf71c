import { readdirSync } from 'node:fs';
import { monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';
import type { MetricsRegistry } from './metrics.ts';

/** GC pause buckets (seconds): most minor GCs are well under a millisecond. */
const GC_BUCKETS = [0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1];
const GC_KINDS: Record<number, string> = { 1: 'minor', 2: 'major', 4: 'incremental', 8: 'weakcb' };
/** The event-loop delay sampler's period: each sample it records is the time between its ticks, this included. */
const LOOP_RESOLUTION_MS = 20;

function openFds(): number {
  try {
    return readdirSync('/proc/self/fd').length;
  } catch {
    return -1; // not Linux: the series is left out
  }
}

/**
 * Process metrics in the names Prometheus client libraries use (`process_*`, `nodejs_*`), read at scrape time: the
 * process's CPU, memory, start and descriptors, and this thread's (`registerThreadMetrics`). Returns a stop function.
 */
export function registerProcessMetrics(metrics: MetricsRegistry): () => void {
  const started = Date.now() / 1000 - process.uptime();
  metrics.collect((out) => {
    const cpu = process.cpuUsage();
    const fds = openFds();
    out.push(
      '# HELP process_cpu_user_seconds_total User CPU time spent by the process.',
      '# TYPE process_cpu_user_seconds_total counter',
      `process_cpu_user_seconds_total ${cpu.user / 1e6}`,
      '# HELP process_cpu_system_seconds_total System CPU time spent by the process.',
      '# TYPE process_cpu_system_seconds_total counter',
      `process_cpu_system_seconds_total ${cpu.system / 1e6}`,
      '# HELP process_cpu_seconds_total User and system CPU time spent by the process.',
      '# TYPE process_cpu_seconds_total counter',
      `process_cpu_seconds_total ${(cpu.user + cpu.system) / 1e6}`,
      '# HELP process_resident_memory_bytes Resident set size of the process.',
      '# TYPE process_resident_memory_bytes gauge',
      `process_resident_memory_bytes ${process.memoryUsage.rss()}`,
      '# HELP process_start_time_seconds Start time of the process since the Unix epoch.',
      '# TYPE process_start_time_seconds gauge',
      `process_start_time_seconds ${Math.round(started)}`,
    );
    if (fds >= 0) out.push('# HELP process_open_fds Open file descriptors.', '# TYPE process_open_fds gauge', `process_open_fds ${fds}`);
  });
  return registerThreadMetrics(metrics);
}

/**
 * This thread's V8 heap, event-loop delay and GC pauses (a worker thread of a supervisor registers these alone; the
 * supervisor sums heaps and pauses over its threads and shows the worst delay). The only always-on parts are the
 * event-loop delay monitor (a libuv timer sampling every 20 ms) and a GC PerformanceObserver (one callback per GC).
 * Returns a stop function.
 */
export function registerThreadMetrics(metrics: MetricsRegistry): () => void {
  const loop = monitorEventLoopDelay({ resolution: LOOP_RESOLUTION_MS });
  loop.enable();
  const gc = metrics.histogram('nodejs_gc_duration_seconds', 'Garbage collection pauses, by kind (minor, major, incremental, weakcb).', ['kind'], GC_BUCKETS);
  const byKind = new Map(Object.entries(GC_KINDS).map(([k, name]) => [Number(k), gc.child(name)]));
  const other = gc.child('other');
  const observer = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      const kind = (e as unknown as { detail?: { kind?: number } }).detail?.kind ?? 0;
      (byKind.get(kind) ?? other).observe(e.duration / 1000);
    }
  });
  observer.observe({ entryTypes: ['gc'] });
  metrics.collect((out) => {
    const mem = process.memoryUsage();
    // The sampler's own period taken out: an idle loop reads 0, not 0.020.
    const delay = (v: number): number => (Number.isFinite(v) ? Math.max(0, v - LOOP_RESOLUTION_MS * 1e6) / 1e9 : 0);
    out.push(
      '# HELP nodejs_heap_size_total_bytes V8 heap size.',
      '# TYPE nodejs_heap_size_total_bytes gauge',
      `nodejs_heap_size_total_bytes ${mem.heapTotal}`,
      '# HELP nodejs_heap_size_used_bytes V8 heap in use.',
      '# TYPE nodejs_heap_size_used_bytes gauge',
      `nodejs_heap_size_used_bytes ${mem.heapUsed}`,
      '# HELP nodejs_external_memory_bytes Memory of C++ objects bound to JavaScript (Buffers).',
      '# TYPE nodejs_external_memory_bytes gauge',
      `nodejs_external_memory_bytes ${mem.external}`,
      '# HELP nodejs_eventloop_delay_seconds Event-loop delay since start, sampled every 20 ms, by quantile (and max).',
      '# TYPE nodejs_eventloop_delay_seconds gauge',
      `nodejs_eventloop_delay_seconds{quantile="0.5"} ${delay(loop.percentile(50))}`,
      `nodejs_eventloop_delay_seconds{quantile="0.99"} ${delay(loop.percentile(99))}`,
      `nodejs_eventloop_delay_seconds{quantile="1"} ${delay(loop.max)}`,
    );
  });
  return () => {
    loop.disable();
    observer.disconnect();
  };
}
