/**
 * Batches ended spans for export (ADR 0037's settings, the SDK's BatchSpanProcessor behaviour): a batch of up to 512
 * leaves as soon as it is full or a second after its first span; one export at a time; at most 8,192 spans wait
 * (beyond that new spans are dropped and counted); `shutdown` exports what is left and waits for it.
 */
import type { LeanSpan, SpanSink } from './lean-span.ts';

export interface ExportOutcome {
  readonly code: number;
  readonly error?: Error;
}

/** The OTLP exporters (otlp-http-exporter.ts, otlp-grpc-exporter.ts). */
export interface LeanSpanExporter {
  export(spans: LeanSpan[], done: (result: ExportOutcome) => void): void;
  shutdown(): Promise<void>;
}

const BATCH = 512;
const QUEUE = 8192;
const DELAY_MS = 1000;

export class SpanBatcher implements SpanSink {
  private queue: LeanSpan[] = [];
  private exporting = false;
  private timer: NodeJS.Timeout | undefined = undefined;
  private idle: (() => void)[] = [];
  dropped = 0;
  private readonly exporter: LeanSpanExporter;
  private readonly onError: (err: Error) => void;
  private readonly onTimer = (): void => {
    this.timer = undefined;
    this.next();
  };

  constructor(exporter: LeanSpanExporter, onError: (err: Error) => void) {
    this.exporter = exporter;
    this.onError = onError;
  }

  onEnd(span: LeanSpan): void {
    if (this.queue.length >= QUEUE) {
      this.dropped++;
      return;
    }
    this.queue.push(span);
    if (this.exporting) return;
    if (this.queue.length >= BATCH) this.next();
    else if (this.timer === undefined) this.timer = setTimeout(this.onTimer, DELAY_MS).unref();
  }

  /** Export one batch, then the next while full ones wait. */
  private next(): void {
    if (this.timer !== undefined) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    if (this.queue.length === 0) {
      for (const w of this.idle.splice(0)) w();
      return;
    }
    const batch = this.queue.length <= BATCH ? this.queue : this.queue.splice(0, BATCH);
    if (batch === this.queue) this.queue = [];
    this.exporting = true;
    this.exporter.export(batch, (result) => {
      this.exporting = false;
      if (result.code !== 0) this.onError(result.error ?? new Error('trace export failed'));
      if (this.queue.length >= BATCH || (this.queue.length > 0 && this.idle.length > 0)) this.next();
      else if (this.queue.length > 0) this.timer ??= setTimeout(this.onTimer, DELAY_MS).unref();
      else for (const w of this.idle.splice(0)) w();
    });
  }

  /** Export everything queued now and wait until it is sent. */
  flush(): Promise<void> {
    if (this.queue.length === 0 && !this.exporting) return Promise.resolve();
    const done = new Promise<void>((resolve) => this.idle.push(resolve));
    if (!this.exporting) this.next();
    return done;
  }

  async shutdown(): Promise<void> {
    await this.flush();
    await this.exporter.shutdown();
  }
}
