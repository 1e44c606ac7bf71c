import type { ExportOutcome as ExportResult } from './span-batcher.ts';

/**
 * The exports in flight of one exporter (OTLP/HTTP and OTLP/gRPC): `begin` gives a settle-once callback (a request
 * may report an error and then close) and `drain` waits for every one still running (forceFlush, shutdown).
 */
export class ExportCalls {
  private readonly running = new Set<Promise<void>>();

  /**
   * With `timeoutMs`, the call fails as `timeout` once that long has passed, whatever comes meanwhile (a collector
   * trickling its answer never lets an idle timeout fire), and `onTimeout` ends it (destroys its request).
   */
  begin(done: (result: ExportResult) => void, timeoutMs = 0, what = 'export', onTimeout?: () => void): (result: ExportResult) => void {
    let finish!: () => void;
    const tracked = new Promise<void>((resolve) => (finish = resolve));
    this.running.add(tracked);
    let settled = false;
    let timer: NodeJS.Timeout | undefined;
    const settle = (result: ExportResult): void => {
      if (settled) return;
      settled = true;
      if (timer !== undefined) clearTimeout(timer);
      this.running.delete(tracked);
      finish();
      done(result);
    };
    if (timeoutMs > 0) {
      timer = setTimeout(() => {
        settle({ code: 1, error: new Error(`${what} timed out`), errorType: 'timeout' });
        onTimeout?.();
      }, timeoutMs).unref();
    }
    return settle;
  }

  async drain(): Promise<void> {
    await Promise.all([...this.running]);
  }
}

/**
 * A failed export call: its error type is the error's code, a bounded set (`ECONNREFUSED`); the code of its cause
 * first, as an HTTP/2 stream cancelled by a failed connect says `ERR_HTTP2_STREAM_CANCEL` caused by `ECONNREFUSED`.
 */
export function failed(error: Error): ExportResult {
  const code = (error.cause as NodeJS.ErrnoException | undefined)?.code ?? (error as NodeJS.ErrnoException).code;
  return { code: 1, error, errorType: code ?? 'error' };
}
