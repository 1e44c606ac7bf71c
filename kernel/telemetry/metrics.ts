import { logDrops } from './logger.ts';

/** The Content-Type of `/metrics`: the text format, in UTF-8 (label values such as model names need not be ASCII). */
export const PROMETHEUS_TEXT = 'text/plain; version=0.0.4; charset=utf-8';

/** Upper bounds (seconds) of the request-duration histogram. */
const DURATION_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/** Counts and durations of one (route, method, status) series. */
class RequestSeries {
  count = 0;
  sum = 0;
  readonly buckets = new Float64Array(DURATION_BUCKETS.length);
  readonly labels: string;
  constructor(labels: string) {
    this.labels = labels;
  }
  observe(seconds: number): void {
    this.count++;
    this.sum += seconds;
    for (let i = 0; i < DURATION_BUCKETS.length; i++) {
      if (seconds <= DURATION_BUCKETS[i]!) {
        this.buckets[i]!++;
        break;
      }
    }
  }
}

/**
 * Longest label value kept, in characters; a longer one is cut and ends in `...`. Label values can come from
 * clients (an LLM model name, an MCP tool name): the series cap bounds how many are kept, this how large each is.
 */
export const MAX_LABEL_VALUE = 256;

function escapeLabel(value: string): string {
  const v = value.length > MAX_LABEL_VALUE ? `${value.slice(0, MAX_LABEL_VALUE)}...` : value;
  return v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

/**
 * The request metrics of one route. Kept across reloads by route key, so counters only ever grow.
 * Series are created on first use of a status code, then reused: no allocation per request.
 */
export class RouteMetrics {
  private readonly byStatus = new Map<number, RequestSeries>();
  private readonly base: string;
  constructor(bind: string, listener: string, route: string) {
    this.base = `bind="${escapeLabel(bind)}",listener="${escapeLabel(listener)}",route="${escapeLabel(route)}"`;
  }
  record(status: number, seconds: number): void {
    let series = this.byStatus.get(status);
    if (!series) this.byStatus.set(status, (series = new RequestSeries(`${this.base},status="${status}"`)));
    series.observe(seconds);
  }
  series(): Iterable<RequestSeries> {
    return this.byStatus.values();
  }
}

/**
 * An increment a counter takes: finite and not negative. A counter only goes up (a decrease reads as a reset to
 * `rate()`), and one NaN or infinity would stay in it for good; a plugin's figure from upstream data (tokens a
 * provider reported, a cost) can be either.
 */
function countable(by: number): boolean {
  return by >= 0 && by !== Infinity;
}

/** One series of a counter, as `inc(labels)` finds it by its labels. */
interface CounterCell {
  v: number;
}

/**
 * A series of a counter as `child` hands it out (a plugin keeps one per label set, e.g. per virtual key): on its first
 * `inc` it becomes its label set's cell, unless one was made already (then it bumps that one). One object per series,
 * not a closure, its context and a cell: with 1,000 keys each series is cold at its next use, and every object on the
 * way cost a cache miss (ADR 0113).
 */
class CounterChild implements CounterCell {
  v = 0;
  private target: CounterCell | undefined;
  private readonly counter: Counter;
  private readonly key: string;
  constructor(counter: Counter, key: string) {
    this.counter = counter;
    this.key = key;
  }
  inc(by = 1): void {
    if (!countable(by)) return;
    (this.target ??= this.counter.cell(this.key, this)).v += by;
  }
}

/** Extra counters plugins and the kernel bump (retries, upstream failures, reloads). */
class Counter {
  readonly values = new Map<string, CounterCell>();
  readonly name: string;
  readonly help: string;
  constructor(name: string, help: string) {
    this.name = name;
    this.help = help;
  }
  /** Run just before `/metrics` renders this counter (MetricCounter.beforeScrape). */
  readonly scrapeHooks: (() => void)[] = [];
  inc(labels: Record<string, string> = {}, by = 1): void {
    if (!countable(by)) return;
    this.cell(this.key(labels)).v += by;
  }
  beforeScrape(fn: () => void): () => void {
    this.scrapeHooks.push(fn);
    return () => {
      const at = this.scrapeHooks.indexOf(fn);
      if (at !== -1) this.scrapeHooks.splice(at, 1);
    };
  }
  /** A series bumped without its key looked up again, made on the first `inc` (a series appears once something is counted in it). */
  child(labels: Record<string, string>): { inc(by?: number): void } {
    return new CounterChild(this, this.key(labels));
  }
  /**
   * The cell of `key`: `made` (or a new one) when there is none yet; past MAX_SERIES_PER_METRIC, the overflow one
   * (checked here, when a series is made, so children handed out before the cap was reached are bounded too).
   */
  cell(key: string, made?: CounterCell): CounterCell {
    let c = this.values.get(key);
    if (c !== undefined) return c;
    if (this.values.size >= MAX_SERIES_PER_METRIC) key = OVERFLOW;
    c = this.values.get(key);
    if (c === undefined) this.values.set(key, (c = made ?? { v: 0 }));
    return c;
  }
  private key(labels: Record<string, string>): string {
    return Object.entries(labels)
      .map(([k, v]) => `${k}="${escapeLabel(v)}"`)
      .join(',');
  }
}

/**
 * Distinct label sets one metric keeps (ADR 0130); later ones are counted in one overflow series. Below the OTel
 * SDK's 2000: a histogram series is 17 or more lines of text here, and label values are client-sized up to 256.
 */
export const MAX_SERIES_PER_METRIC = 1000;

/** The labels of the overflow series, as the OTel SDK marks it: the label sets past the cap are counted there. */
export const OVERFLOW = 'otel_metric_overflow="true"';

/** One labelled series of a histogram: observe() allocates nothing. */
export class HistogramChild {
  count = 0;
  sum = 0;
  readonly buckets: Float64Array;
  private readonly bounds: readonly number[];
  constructor(bounds: readonly number[]) {
    this.bounds = bounds;
    this.buckets = new Float64Array(bounds.length);
  }
  observe(value: number): void {
    // NaN or an infinity would stay in the sum for good (an upstream's figure); negative values are valid observations.
    if (!Number.isFinite(value)) return;
    this.count++;
    this.sum += value;
    const b = this.bounds;
    for (let i = 0; i < b.length; i++) {
      if (value <= b[i]!) {
        this.buckets[i]!++;
        return;
      }
    }
  }
}

/**
 * A Prometheus histogram with fixed label names. Resolve a series once with `child()` (at compile time, when the
 * labels are a route or a backend) and keep it; `observe()` looks the series up by its label values.
 */
export class Histogram {
  readonly name: string;
  readonly help: string;
  readonly labelNames: readonly string[];
  readonly bounds: readonly number[];
  readonly children = new Map<string, HistogramChild>();
  private overflow: HistogramChild | undefined;
  constructor(name: string, help: string, labelNames: readonly string[], bounds: readonly number[]) {
    this.name = name;
    this.help = help;
    this.labelNames = labelNames;
    this.bounds = [...bounds].sort((a, b) => a - b);
  }
  /** The series of these label values (in `labelNames` order); past MAX_SERIES_PER_METRIC, the overflow one. */
  child(...values: string[]): HistogramChild {
    const key = this.labelNames.map((n, i) => `${n}="${escapeLabel(values[i] ?? '')}"`).join(',');
    let c = this.children.get(key);
    if (c) return c;
    if (this.children.size >= MAX_SERIES_PER_METRIC) {
      if (!this.overflow) this.children.set(OVERFLOW, (this.overflow = new HistogramChild(this.bounds)));
      return this.overflow;
    }
    this.children.set(key, (c = new HistogramChild(this.bounds)));
    return c;
  }
  /** Observe by label object (plugins); `child()` is the allocation-free path. */
  observe(labels: Record<string, string>, value: number): void {
    this.child(...this.labelNames.map((n) => labels[n] ?? '')).observe(value);
  }
  render(out: string[]): void {
    out.push(`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} histogram`);
    for (const [labels, s] of this.children) {
      const sep = labels ? `${labels},` : '';
      let cumulative = 0;
      for (let i = 0; i < this.bounds.length; i++) {
        cumulative += s.buckets[i]!;
        out.push(`${this.name}_bucket{${sep}le="${this.bounds[i]}"} ${cumulative}`);
      }
      out.push(`${this.name}_bucket{${sep}le="+Inf"} ${s.count}`);
      out.push(labels ? `${this.name}_sum{${labels}} ${s.sum}` : `${this.name}_sum ${s.sum}`);
      out.push(labels ? `${this.name}_count{${labels}} ${s.count}` : `${this.name}_count ${s.count}`);
    }
  }
}

/** All metrics of the process, rendered in the Prometheus text format. */
export class MetricsRegistry {
  private readonly routes = new Map<string, RouteMetrics>();
  private readonly counters = new Map<string, Counter>();
  private readonly histograms = new Map<string, Histogram>();
  private readonly gauges = new Map<string, { help: string; read: () => number }>();
  private readonly collectors: ((out: string[]) => void)[] = [];

  /** A histogram shared by every caller asking for the same name (the first caller's labels and buckets win). */
  histogram(name: string, help: string, labelNames: readonly string[], buckets: readonly number[]): Histogram {
    let h = this.histograms.get(name);
    if (!h) this.histograms.set(name, (h = new Histogram(name, help, labelNames, buckets)));
    return h;
  }

  /** Lines written at scrape time by a collector (process metrics read lazily). */
  collect(fn: (out: string[]) => void): void {
    this.collectors.push(fn);
  }

  private readonly closers: (() => void)[] = [];
  /** Run `fn` when the gateway stops (the event-loop monitor and the GC observer are stopped there). */
  onClose(fn: () => void): void {
    this.closers.push(fn);
  }
  close(): void {
    for (const fn of this.closers.splice(0)) fn();
  }

  route(bind: string, listener: string, route: string): RouteMetrics {
    const key = `${bind}\u0000${listener}\u0000${route}`;
    let m = this.routes.get(key);
    if (!m) this.routes.set(key, (m = new RouteMetrics(bind, listener, route)));
    return m;
  }

  counter(name: string, help: string): Counter {
    let c = this.counters.get(name);
    if (!c) this.counters.set(name, (c = new Counter(name, help)));
    return c;
  }

  gauge(name: string, help: string, read: () => number): void {
    this.gauges.set(name, { help, read });
  }

  render(): string {
    const out: string[] = [];
    out.push('# HELP switchyard_requests_total HTTP requests handled, by route and status.');
    out.push('# TYPE switchyard_requests_total counter');
    for (const r of this.routes.values()) for (const s of r.series()) out.push(`switchyard_requests_total{${s.labels}} ${s.count}`);
    out.push('# HELP switchyard_request_duration_seconds Time from request arrival to the end of the response.');
    out.push('# TYPE switchyard_request_duration_seconds histogram');
    for (const r of this.routes.values()) {
      for (const s of r.series()) {
        let cumulative = 0;
        for (let i = 0; i < DURATION_BUCKETS.length; i++) {
          cumulative += s.buckets[i]!;
          out.push(`switchyard_request_duration_seconds_bucket{${s.labels},le="${DURATION_BUCKETS[i]}"} ${cumulative}`);
        }
        out.push(`switchyard_request_duration_seconds_bucket{${s.labels},le="+Inf"} ${s.count}`);
        out.push(`switchyard_request_duration_seconds_sum{${s.labels}} ${s.sum}`);
        out.push(`switchyard_request_duration_seconds_count{${s.labels}} ${s.count}`);
      }
    }
    for (const c of this.counters.values()) {
      // A plugin's hook failing must not take the page down: its series show what they held.
      for (const fn of c.scrapeHooks) {
        try {
          fn();
        } catch {
          /* the series as they were */
        }
      }
      out.push(`# HELP ${c.name} ${c.help}`, `# TYPE ${c.name} counter`);
      for (const [labels, { v }] of c.values) out.push(labels ? `${c.name}{${labels}} ${v}` : `${c.name} ${v}`);
    }
    for (const h of this.histograms.values()) h.render(out);
    for (const [name, g] of this.gauges) out.push(`# HELP ${name} ${g.help}`, `# TYPE ${name} gauge`, `${name} ${g.read()}`);
    // The log output is the thread's, not a gateway's: each worker's count, summed by the supervisor.
    out.push('# HELP switchyard_log_lines_dropped_total Log lines dropped because the log output (stdout) did not keep up or was closed.');
    out.push('# TYPE switchyard_log_lines_dropped_total counter', `switchyard_log_lines_dropped_total ${logDrops.lines}`);
    for (const fn of this.collectors) fn(out);
    return `${out.join('\n')}\n`;
  }
}
