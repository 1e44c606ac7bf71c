/**
 * Starts the OpenTelemetry SDK for `config.tracing` (ADR 0037). Everything here is imported dynamically, and only
 * when the config has a `tracing` block: the SDK, the OTLP exporter, the API and the kernel's facade.
 */
import { randomFillSync } from 'node:crypto';
import type { Attributes, Context, Link, SpanKind } from '@opentelemetry/api';
import type { Sampler, SamplingResult } from '@opentelemetry/sdk-trace';
import type { Logger } from '../sdk/index.ts';
import type { TracingConfig } from './tracing-config.ts';
import type { Tracing } from './tracing.ts';

export async function startTracing(cfg: TracingConfig, logger: Logger): Promise<Tracing> {
  const [api, sdk, core, resources, hooks, facade] = await Promise.all([
    import('@opentelemetry/api'),
    import('@opentelemetry/sdk-trace'),
    import('@opentelemetry/core'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/context-async-hooks'),
    import('./tracing.ts'),
  ]);
  // The exporters and the protobuf encoder are the kernel's own (ADR 0049): leaner per batch than the SDK's.
  const [{ OtlpHttpTraceExporter }, { OtlpGrpcTraceExporter }, { encodeTraceRequest }] = await Promise.all([
    import('./otlp-http-exporter.ts'),
    import('./otlp-grpc-exporter.ts'),
    import('./otlp-encode.ts'),
  ]);
  let exporter;
  if (cfg.protocol === 'http') {
    exporter = new OtlpHttpTraceExporter(cfg.url, cfg.headers);
  } else {
    const headers = Object.fromEntries(Object.entries(cfg.headers).map(([k, v]) => [k.toLowerCase(), v]));
    exporter = new OtlpGrpcTraceExporter(cfg.url, headers, encodeTraceRequest);
  }

  // Sampling (BEHAVIOUR.md §6.3): a client's sampled parent is honoured at `clientSampling`, a request without a
  // trace starts one at `randomSampling`, an unsampled parent is respected; child spans follow their parent.
  const ratioSampler = (r: number): Sampler => (r >= 1 ? new sdk.AlwaysOnSampler() : r <= 0 ? new sdk.AlwaysOffSampler() : new sdk.TraceIdRatioBasedSampler(r));
  const random = ratioSampler(cfg.randomRatio);
  const client = ratioSampler(cfg.clientRatio);
  const sampler: Sampler = {
    shouldSample(ctx: Context, traceId: string, name: string, kind: SpanKind, attributes: Attributes, links: Link[]): SamplingResult {
      const parent = api.trace.getSpanContext(ctx);
      if (parent === undefined || !api.isSpanContextValid(parent)) return random.shouldSample(ctx, traceId, name, kind, attributes, links);
      const sampled = (parent.traceFlags & api.TraceFlags.SAMPLED) !== 0;
      if (!parent.isRemote) return { decision: sampled ? sdk.SamplingDecision.RECORD_AND_SAMPLED : sdk.SamplingDecision.NOT_RECORD };
      return sampled ? client.shouldSample(ctx, traceId, name, kind, attributes, links) : { decision: sdk.SamplingDecision.NOT_RECORD };
    },
    toString: () => `Switchyard{random=${cfg.randomRatio},client=${cfg.clientRatio}}`,
  };

  const processor = new sdk.BatchSpanProcessor({ exporter, scheduledDelayMillis: 1000, maxQueueSize: 8192, maxExportBatchSize: 512 });
  const provider = new sdk.TracerProvider({
    resource: resources.defaultResource().merge(resources.resourceFromAttributes({ ...cfg.resource })),
    sampler,
    idGenerator: new PooledIdGenerator(),
    spanProcessors: [processor],
  });
  // Export failures are the trace backend's trouble, not the request's: say so in the process log, once a minute.
  let lastWarned = 0;
  core.setGlobalErrorHandler((err) => {
    const now = Date.now();
    if (now - lastWarned < 60_000) return;
    lastWarned = now;
    logger.warn('trace export failed', { error: err instanceof Error ? err : new Error(String(err)), endpoint: cfg.url });
  });
  // Async-context propagation, so calls made deep inside plugins find the request's span. The first gateway of
  // the process registers it; another one (tests run several) uses the same.
  api.context.setGlobalContextManager(new hooks.AsyncLocalStorageContextManager().enable());
  const propagator = new core.CompositePropagator({ propagators: [new core.W3CTraceContextPropagator(), new core.W3CBaggagePropagator()] });
  const tracer = provider.getTracer('switchyard');
  return new facade.Tracing(tracer, propagator, () => provider.shutdown(), cfg.captureMessageContent);
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
