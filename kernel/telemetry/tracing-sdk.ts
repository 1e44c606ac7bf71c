/**
 * Starts tracing for `config.tracing` (ADRs 0037, 0049, 0055). Everything here is imported dynamically, and only
 * when the config has a `tracing` block: the API, the kernel's tracer and exporters, the resource detection and the
 * async-context manager. The spans, sampler, batching, OTLP encoding and export are the kernel's own.
 */
import type { Logger } from '../sdk/index.ts';
import type { TracingConfig } from './tracing-config.ts';
import type { MetricsRegistry } from './metrics.ts';
import type { SpanStats } from './span-batcher.ts';
import type { Tracing } from './tracing.ts';
// Not `import ... from 'node:crypto'`: an ES import builds crypto's namespace, which reads its lazy `webcrypto` getter and
// so loads Node's WebCrypto for every gateway (docs/perf.md "Memory, session 10b").
const { randomFillSync } = process.getBuiltinModule('node:crypto');

export async function startTracing(cfg: TracingConfig, logger: Logger, metrics?: MetricsRegistry): Promise<Tracing> {
  const [api, core, resources, hooks, facade, lean, batcher, { OtlpHttpTraceExporter }, { OtlpGrpcTraceExporter }, { TraceBatchEncoder }] = await Promise.all([
    import('@opentelemetry/api'),
    import('@opentelemetry/core'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/context-async-hooks'),
    import('./tracing.ts'),
    import('./lean-span.ts'),
    import('./span-batcher.ts'),
    import('./otlp-http-exporter.ts'),
    import('./otlp-grpc-exporter.ts'),
    import('./otlp-encode.ts'),
  ]);
  // The resource (service name, SDK and process attributes, the config's own) is fixed at start.
  const resource = resources.defaultResource().merge(resources.resourceFromAttributes({ ...cfg.resource }));
  const encoder = new TraceBatchEncoder(resource.attributes, 'switchyard', resource.schemaUrl);
  let exporter;
  if (cfg.protocol === 'http') {
    exporter = new OtlpHttpTraceExporter(cfg.url, cfg.headers, undefined, cfg.tls);
  } else {
    const headers = Object.fromEntries(Object.entries(cfg.headers).map(([k, v]) => [k.toLowerCase(), v]));
    exporter = new OtlpGrpcTraceExporter(cfg.url, headers, undefined, cfg.tls);
  }
  // Export failures are the trace backend's trouble, not the request's: say so in the process log, once a minute.
  let lastWarned = 0;
  const warn = (err: unknown): void => {
    const now = Date.now();
    if (now - lastWarned < 60_000) return;
    lastWarned = now;
    logger.warn('trace export failed', { error: err instanceof Error ? err : new Error(String(err)), endpoint: cfg.url });
  };
  const spans = new batcher.SpanBatcher(exporter, encoder, warn, metrics && spanStats(metrics, () => spans.queuedSpans), cfg.scheduleDelayMs);
  const tracer = new lean.LeanTracer(spans, new PooledIdGenerator(), cfg.randomRatio, cfg.clientRatio);
  // Async-context propagation, so calls made deep inside plugins find the request's span. The first gateway of
  // the process registers it; another one (tests run several) uses the same.
  api.context.setGlobalContextManager(new hooks.AsyncLocalStorageContextManager().enable());
  const propagator = new core.CompositePropagator({ propagators: [new core.W3CTraceContextPropagator(), new core.W3CBaggagePropagator()] });
  return new facade.Tracing(tracer, propagator, () => spans.shutdown(), cfg.captureMessageContent);
}

/**
 * The OpenTelemetry SDK's own metrics (semantic conventions `otel.sdk.*`), so spans lost to a slow or failing
 * collector show: the queue's size, spans dropped (`queue_full`) and exports that failed, by `error_type`.
 */
function spanStats(metrics: MetricsRegistry, queued: () => number): SpanStats {
  const processed = metrics.counter('otel_sdk_processor_span_processed_total', 'Spans the batching processor is done with: handed to the exporter (error_type empty) or dropped (queue_full, encode_failed).');
  const exported = metrics.counter('otel_sdk_exporter_span_exported_total', 'Spans whose export finished: accepted (error_type empty) or failed (timeout, an HTTP status, a gRPC status name, a socket error code).');
  metrics.gauge('otel_sdk_processor_span_queue_size', 'Spans waiting for export (at most 8192; more are dropped as queue_full).', queued);
  return {
    processed: (n, errorType) => processed.inc({ error_type: errorType }, n),
    exported: (n, errorType) => exported.inc({ error_type: errorType }, n),
  };
}

const POOL_BYTES = 4096;

/**
 * Trace and span ids cut from a pool of random bytes, hex-encoded once per refill (ADR 0049): a slice per id, in
 * place of the SDK's Math.random per 4 bytes and a hex conversion per id. An all-zero id (invalid) is skipped.
 */
export class PooledIdGenerator {
  private hex = '';
  private at = POOL_BYTES * 2;
  private readonly pool = Buffer.allocUnsafe(POOL_BYTES);

  private take(bytes: number): string {
    const chars = bytes * 2;
    for (;;) {
      if (this.at + chars > this.hex.length) {
        this.hex = randomFillSync(this.pool).toString('hex');
        this.at = 0;
      }
      const id = this.hex.slice(this.at, (this.at += chars));
      if (id !== (bytes === 16 ? ZERO_TRACE : ZERO_SPAN)) return id;
    }
  }

  generateTraceId(): string {
    return this.take(16);
  }

  generateSpanId(): string {
    return this.take(8);
  }
}

const ZERO_TRACE = '0'.repeat(32);
const ZERO_SPAN = '0'.repeat(16);
