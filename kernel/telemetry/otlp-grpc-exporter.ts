/**
 * OTLP over gRPC without a gRPC library (ADR 0037): one unary call, `TraceService/Export`, on a node:http2 session,
 * its message the OTLP protobuf otlp-encode.ts makes (handed over by span-batcher.ts), in gRPC's length-prefixed framing. The kernel takes
 * no gRPC dependency (import-boundaries.test.ts), and a trimmed distribution stays free of `@grpc/grpc-js`.
 */
import { connect, constants } from 'node:http2';
import type { ClientHttp2Session, ClientHttp2Stream } from 'node:http2';
import { ExportCalls, failed, MAX_ANSWER_BYTES, partialSuccess } from './export-calls.ts';
import type { ExportOutcome as ExportResult, LeanSpanExporter } from './span-batcher.ts';
import { collectorTlsOptions } from './tracing-config.ts';
import { GRPC_STATUS_NAMES } from './grpc-status.ts';
import type { TracingTls } from './tracing-config.ts';

const EXPORT_PATH = '/opentelemetry.proto.collector.trace.v1.TraceService/Export';
const SUCCESS = 0;
const FAILED = 1;

/** gRPC's percent-encoded `grpc-message`; as sent when it is not valid encoding (a throw here would crash the process). */
function percentDecoded(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** An accepted export's outcome, with the partial success of its answer message (uncompressed) when it has one. */
function answered(frame: Buffer): ExportResult {
  const partial = frame.length > 5 && frame[0] === 0 ? partialSuccess(frame.subarray(5, 5 + frame.readUInt32BE(1))) : undefined;
  return partial ? { code: SUCCESS, rejected: partial.rejected, rejectedReason: partial.message } : { code: SUCCESS };
}

export class OtlpGrpcTraceExporter implements LeanSpanExporter {
  private session: ClientHttp2Session | undefined;
  private readonly url: string;
  private readonly headers: Readonly<Record<string, string>>;
  private readonly timeoutMs: number;
  private readonly calls = new ExportCalls();
  /** Exports waiting for their answer: the session keeps the process alive only while there are some. */
  private inFlight = 0;

  private readonly tls: TracingTls | undefined;

  constructor(url: string, headers: Readonly<Record<string, string>>, timeoutMs = 10_000, tls?: TracingTls) {
    this.url = url;
    this.headers = headers;
    this.timeoutMs = timeoutMs;
    this.tls = tls;
  }

  private connection(): ClientHttp2Session {
    if (this.session && !this.session.closed && !this.session.destroyed) return this.session;
    const session = connect(this.url, collectorTlsOptions(this.tls));
    // A trace backend that is down must not keep the process alive or crash it.
    session.unref();
    session.on('error', () => undefined);
    session.on('close', () => {
      if (this.session === session) this.session = undefined;
    });
    this.session = session;
    return session;
  }

  export(body: Buffer, done: (result: ExportResult) => void): void {
    const frame = Buffer.allocUnsafe(5 + body.length);
    frame[0] = 0; // not compressed
    frame.writeUInt32BE(body.length, 1);
    frame.set(body, 5);
    // An export keeps the process alive until it is answered or times out (at most `timeoutMs`): at shutdown it is
    // the last work left, and an unref'd session let Node exit mid-export (code 13, spans lost).
    let session: ClientHttp2Session;
    try {
      session = this.connection();
    } catch (error) {
      return done(failed(error as Error));
    }
    this.inFlight++;
    session.ref();
    let req: ClientHttp2Stream | undefined;
    // At the deadline its connection goes too: one that took an export and never answered (a hung collector, a peer
    // gone without a reset) would hold every later export until they time out as well. The next one connects anew.
    const settle = this.calls.begin(
      (result) => {
        if (--this.inFlight === 0) this.session?.unref();
        done(result);
      },
      this.timeoutMs,
      `OTLP/gRPC export to ${this.url}`,
      () => {
        req?.close(constants.NGHTTP2_CANCEL);
        if (this.session === session) this.session = undefined;
        session.destroy();
      },
    );
    let status: string | undefined;
    let message: string | undefined;
    const read = (h: Record<string, unknown>): void => {
      if (h['grpc-status'] !== undefined) status = String(h['grpc-status']);
      if (h['grpc-message'] !== undefined) message = percentDecoded(String(h['grpc-message']));
    };
    try {
      req = session.request({
        ...this.headers,
        ':method': 'POST',
        ':path': EXPORT_PATH,
        'content-type': 'application/grpc',
        te: 'trailers',
      });
      req.on('response', read);
      req.on('trailers', read);
      // The answer message (gRPC framing: a flag byte, a 4-byte length) may carry a partial success.
      const kept: Buffer[] = [];
      let size = 0;
      req.on('data', (chunk: Buffer) => {
        if (size >= MAX_ANSWER_BYTES) return;
        kept.push(chunk);
        size += chunk.length;
      });
      req.on('error', (error: Error) => settle(failed(error)));
      req.on('close', () =>
        settle(
          status === '0'
            ? answered(Buffer.concat(kept))
            : {
                code: FAILED,
                error: new Error(`OTLP/gRPC export to ${this.url} failed: grpc-status ${status ?? 'missing'}${message ? ` (${message})` : ''}`),
                // A name for the 17 codes gRPC defines; anything else a collector sends is one bounded value.
                errorType: (status !== undefined && GRPC_STATUS_NAMES[Number(status)]) || 'UNKNOWN',
              },
        ),
      );
      req.end(frame);
    } catch (error) {
      settle(failed(error as Error));
    }
  }

  async forceFlush(): Promise<void> {
    await this.calls.drain();
  }

  async shutdown(): Promise<void> {
    await this.forceFlush();
    this.session?.close();
    this.session = undefined;
  }
}
