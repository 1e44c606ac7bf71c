import type { HistogramChild, MetricsRegistry } from './metrics.ts';

/** Upper bounds (seconds) of the upstream attempt histogram (same as the request-duration one). */
const UPSTREAM_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/** What one upstream target (one backend origin) records: resolved once, when the target is built at compile time. */
export interface BackendMetrics {
  /** Time from sending one attempt to its response headers (or its failure). */
  readonly duration: HistogramChild;
  connectError(code: string): void;
  retry(): void;
  /** A retry the retry budget refused (ADR 0125). */
  retryOverflow(): void;
}

/** The per-backend upstream metrics, labelled `backend` (the origin from config; never request data). */
export class UpstreamMetrics {
  private readonly registry: MetricsRegistry;
  constructor(registry: MetricsRegistry) {
    this.registry = registry;
  }
  forBackend(backend: string): BackendMetrics {
    const duration = this.registry
      .histogram('switchyard_upstream_request_duration_seconds', 'Time from sending one attempt to a backend to its response headers (or its failure), by backend.', ['backend'], UPSTREAM_BUCKETS)
      .child(backend);
    const connectErrors = this.registry.counter('switchyard_upstream_connect_errors_total', 'Attempts that could not reach a backend (refused, DNS, connect timeout), by backend and code.');
    const retries = this.registry.counter('switchyard_upstream_retries_total', 'Attempts sent again to the same backend by the retry policy, by backend.');
    const overflows = this.registry.counter('switchyard_upstream_retries_overflow_total', 'Retries not sent because the retry budget was spent (20% of the requests in flight, at least 3), by backend.');
    return {
      duration,
      connectError: (code) => connectErrors.inc({ backend, code }),
      retry: () => retries.inc({ backend }),
      retryOverflow: () => overflows.inc({ backend }),
    };
  }
}
