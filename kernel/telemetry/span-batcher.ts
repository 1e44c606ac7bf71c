/**
 * Batches ended spans for export (ADR 0037's settings, the SDK's BatchSpanProcessor behaviour): a batch of up to 512
 * leaves as soon as it is full or OTEL_BSP_SCHEDULE_DELAY (default a second) after its first span; one export at a
 * time; at most 8,192 spans wait (beyond that new spans are dropped and counted); `shutdown` exports what is left and
 * waits for it.
 * A span is encoded to its protobuf bytes when it ends (ADR 0055, otlp-encode.ts `TraceBatchEncoder`): the batches
 * hold bytes, not span objects, so a span dies young instead of surviving scavenges for up to a second. Bytes are
 * capped too: a batch closes at 2 MiB (under gRPC's default 4 MiB message limit), and beyond 64 MiB waiting new
 * spans are dropped and counted.
 */
import type { LeanSpan, SpanSink } from './lean-span.ts';
import { Writer } from './otlp-encode.ts';
import type { TraceBatchEncoder } from './otlp-encode.ts';

export interface ExportOutcome {
  readonly code: number;
  readonly error?: Error;
  /** A failure's cause as a short, bounded label: `timeout`, an HTTP status, a gRPC status name, a socket error code. */
  readonly errorType?: string;
  /** An accepted export's `partial_success`: spans the collector rejected, and its reason. */
  readonly rejected?: number;
  readonly rejectedReason?: string;
}

/**
 * What the batcher counts (the OpenTelemetry SDK's own metrics, tracing-sdk.ts): spans done with (`''` when handed
 * to the exporter, `queue_full` or `encode_failed` when dropped) and spans whose export finished (`''`: accepted).
 */
export interface SpanStats {
  processed(spans: number, errorType: string): void;
  exported(spans: number, errorType: string): void;
}

/** The OTLP exporters (otlp-http-exporter.ts, otlp-grpc-exporter.ts): `body` is an ExportTraceServiceRequest. */
export interface LeanSpanExporter {
  export(body: Buffer, done: (result: ExportOutcome) => void): void;
  shutdown(): Promise<void>;
}

const BATCH = 512;
const QUEUE = 8192;
const BATCH_BYTES = 2 * 1024 * 1024;
const QUEUE_BYTES = 64 * 1024 * 1024;
/** A batch writer's first size, and the largest one kept for the next batch. */
const WRITER_BYTES = 64 * 1024;
const KEEP_WRITER_BYTES = 4 * 1024 * 1024;

interface Batch {
  readonly w: Writer;
  spans: number;
}

export class SpanBatcher implements SpanSink {
  /** Closed batches (full, in spans or bytes), oldest first. */
  private full: Batch[] = [];
  /** The batch spans are appended to. */
  private open: Batch | undefined = undefined;
  /** Spans and bytes waiting (not the batch being exported). */
  private queued = 0;
  private queuedBytes = 0;
  private spare: Writer | undefined = undefined;
  private exporting = false;
  private timer: NodeJS.Timeout | undefined = undefined;
  private idle: (() => void)[] = [];
  dropped = 0;
  private readonly exporter: LeanSpanExporter;
  private readonly encoder: TraceBatchEncoder;
  private readonly onError: (err: Error) => void;
  private readonly stats: SpanStats | undefined;
  /** Longest a span waits for the export of its batch (OTEL_BSP_SCHEDULE_DELAY, tracing-config.ts). */
  private readonly delayMs: number;
  private readonly onTimer = (): void => {
    this.timer = undefined;
    this.next();
  };

  constructor(exporter: LeanSpanExporter, encoder: TraceBatchEncoder, onError: (err: Error) => void, stats?: SpanStats, delayMs = 1000) {
    this.delayMs = delayMs;
    this.exporter = exporter;
    this.encoder = encoder;
    this.onError = onError;
    this.stats = stats;
  }

  /** Spans waiting to be exported (not the batch being exported). */
  get queuedSpans(): number {
    return this.queued;
  }

  onEnd(span: LeanSpan): void {
    if (this.queued >= QUEUE || this.queuedBytes >= QUEUE_BYTES) {
      this.dropped++;
      this.stats?.processed(1, 'queue_full');
      return;
    }
    let b = this.open;
    if (b === undefined) {
      const w = this.spare ?? new Writer(WRITER_BYTES);
      this.spare = undefined;
      w.pos = 0;
      b = this.open = { w, spans: 0 };
    }
    const before = b.w.pos;
    try {
      this.encoder.append(b.w, span);
    } catch (error) {
      // A value the encoder cannot write must not fail the request that ended the span: the span is left out.
      b.w.pos = before;
      this.dropped++;
      this.stats?.processed(1, 'encode_failed');
      this.onError(error as Error);
      return;
    }
    b.spans++;
    this.queued++;
    this.queuedBytes += b.w.pos - before;
    if (b.spans >= BATCH || b.w.pos >= BATCH_BYTES) {
      this.full.push(b);
      this.open = undefined;
    }
    if (this.exporting) return;
    if (this.full.length > 0) this.next();
    else if (this.timer === undefined && this.open !== undefined) this.timer = setTimeout(this.onTimer, this.delayMs).unref();
  }

  /** Export one batch, then the next while full ones wait. */
  private next(): void {
    if (this.timer !== undefined) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    let batch = this.full.shift();
    if (batch === undefined) {
      batch = this.open;
      this.open = undefined;
    }
    if (batch === undefined || batch.spans === 0) {
      for (const w of this.idle.splice(0)) w();
      return;
    }
    this.queued -= batch.spans;
    this.queuedBytes -= batch.w.pos;
    const body = this.encoder.request(batch.w.buf.subarray(0, batch.w.pos));
    if (this.spare === undefined && batch.w.buf.length <= KEEP_WRITER_BYTES) this.spare = batch.w;
    this.exporting = true;
    const spans = batch.spans;
    this.stats?.processed(spans, '');
    this.exporter.export(body, (result) => {
      this.exporting = false;
      // Spans a collector rejected in an accepted export count as failed, `rejected` (the SDK metrics' convention).
      const rejected = result.code === 0 ? Math.min(spans, result.rejected ?? 0) : 0;
      if (spans > rejected) this.stats?.exported(spans - rejected, result.code === 0 ? '' : (result.errorType ?? 'error'));
      if (rejected > 0) this.stats?.exported(rejected, 'rejected');
      if (result.code !== 0) this.onError(result.error ?? new Error('trace export failed'));
      else if (rejected > 0) this.onError(new Error(`the collector rejected ${rejected} of ${spans} spans${result.rejectedReason ? `: ${result.rejectedReason}` : ''}`));
      else if (result.rejectedReason) this.onError(new Error(`the collector accepted the spans with a warning: ${result.rejectedReason}`));
      if (this.full.length > 0 || (this.open !== undefined && this.idle.length > 0)) this.next();
      else if (this.open !== undefined) this.timer ??= setTimeout(this.onTimer, this.delayMs).unref();
      else for (const w of this.idle.splice(0)) w();
    });
  }

  /** Export everything queued now and wait until it is sent. */
  flush(): Promise<void> {
    if (this.queued === 0 && !this.exporting) return Promise.resolve();
    const done = new Promise<void>((resolve) => this.idle.push(resolve));
    if (!this.exporting) this.next();
    return done;
  }

  async shutdown(): Promise<void> {
    await this.flush();
    await this.exporter.shutdown();
  }
}
