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

/** The largest collector answer read for its partial success; the rest is discarded (an answer is a few bytes). */
export const MAX_ANSWER_BYTES = 64 * 1024;

/**
 * `partial_success` of an OTLP ExportTraceServiceResponse (protobuf): spans the collector rejected and why. Undefined
 * when the answer has none or cannot be read (a collector's garbage is not a reason to fail an export it accepted).
 */
export function partialSuccess(body: Buffer): { rejected: number; message: string } | undefined {
  try {
    const outer = fields(body).get(1);
    if (!(outer instanceof Buffer)) return undefined;
    const inner = fields(outer);
    const rejected = inner.get(1);
    const message = inner.get(2);
    return {
      rejected: typeof rejected === 'number' ? rejected : 0,
      // Bounded: the collector's words go into the gateway's log.
      message: message instanceof Buffer ? message.toString('utf8', 0, Math.min(message.length, 256)) : '',
    };
  } catch {
    return undefined;
  }
}

/** The last value of each field of a protobuf message: varints as numbers, length-delimited ones as bytes. */
function fields(buf: Buffer): Map<number, number | Buffer> {
  const out = new Map<number, number | Buffer>();
  let at = 0;
  const varint = (): number => {
    let n = 0;
    for (let shift = 0; ; shift += 7) {
      if (at >= buf.length || shift > 63) throw new Error('truncated varint');
      const b = buf[at++]!;
      n += (b & 0x7f) * 2 ** shift;
      if (b < 0x80) return n;
    }
  };
  while (at < buf.length) {
    const tag = varint();
    const wire = tag % 8;
    const field = Math.floor(tag / 8);
    if (wire === 0) out.set(field, varint());
    else if (wire === 2) {
      const len = varint();
      if (at + len > buf.length) throw new Error('truncated field');
      out.set(field, buf.subarray(at, (at += len)));
    } else if (wire === 1) at += 8;
    else if (wire === 5) at += 4;
    else throw new Error(`wire type ${wire}`);
  }
  return out;
}
