import type { ExportOutcome as ExportResult } from './span-batcher.ts';

/**
 * The exports in flight of one exporter (OTLP/HTTP and OTLP/gRPC): `begin` gives a settle-once callback (a request
 * may report an error and then close) and `drain` waits for every one still running (forceFlush, shutdown).
 */
export class ExportCalls {
  private readonly running = new Set<Promise<void>>();

  begin(done: (result: ExportResult) => void): (result: ExportResult) => void {
    let finish!: () => void;
    const tracked = new Promise<void>((resolve) => (finish = resolve));
    this.running.add(tracked);
    let settled = false;
    return (result) => {
      if (settled) return;
      settled = true;
      this.running.delete(tracked);
      finish();
      done(result);
    };
  }

  async drain(): Promise<void> {
    await Promise.all([...this.running]);
  }
}

/** A failed export call: its error type is the error's code (`ECONNREFUSED`, `ERR_HTTP2_...`), a bounded set. */
export function failed(error: Error): ExportResult {
  return { code: 1, error, errorType: (error as NodeJS.ErrnoException).code ?? 'error' };
}
