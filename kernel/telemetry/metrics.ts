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

function escapeLabel(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
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

/** Extra counters plugins and the kernel bump (retries, upstream failures, reloads). */
class Counter {
  readonly values = new Map<string, number>();
  readonly name: string;
  readonly help: string;
  constructor(name: string, help: string) {
    this.name = name;
    this.help = help;
  }
  inc(labels: Record<string, string> = {}, by = 1): void {
    const key = Object.entries(labels)
      .map(([k, v]) => `${k}="${escapeLabel(v)}"`)
      .join(',');
    this.values.set(key, (this.values.get(key) ?? 0) + by);
  }
}

/** All metrics of the process, rendered in the Prometheus text format. */
export class MetricsRegistry {
  private readonly routes = new Map<string, RouteMetrics>();
  private readonly counters = new Map<string, Counter>();
  private readonly gauges = new Map<string, { help: string; read: () => number }>();

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
      out.push(`# HELP ${c.name} ${c.help}`, `# TYPE ${c.name} counter`);
      for (const [labels, v] of c.values) out.push(labels ? `${c.name}{${labels}} ${v}` : `${c.name} ${v}`);
    }
    for (const [name, g] of this.gauges) out.push(`# HELP ${name} ${g.help}`, `# TYPE ${name} gauge`, `${name} ${g.read()}`);
    return `${out.join('\n')}\n`;
  }
}
