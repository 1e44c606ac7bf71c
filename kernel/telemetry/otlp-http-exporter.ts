/**
 * OTLP/HTTP (protobuf) trace export on node:http with a keep-alive agent (ADR 0049): one POST per batch, its body
 * encoded by otlp-encode.ts. In place of the SDK's exporter, whose delegate, promise queue and transport layers
 * cost more per batch than the request itself (the batcher hands it the encoded request, span-batcher.ts); a failed export is reported to the batcher's error handler (one
 * warning a minute, tracing-sdk.ts) and dropped, as the SDK's exporter does after its retries.
 */
import { Agent as HttpAgent, request as httpRequest } from 'node:http';
import type { ClientRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { ExportCalls, failed, MAX_ANSWER_BYTES, partialSuccess } from './export-calls.ts';
import type { ExportOutcome as ExportResult, LeanSpanExporter } from './span-batcher.ts';
import { collectorTlsOptions } from './tracing-config.ts';
import type { TracingTls } from './tracing-config.ts';

const SUCCESS = 0;
const FAILED = 1;

export class OtlpHttpTraceExporter implements LeanSpanExporter {
  private readonly url: URL;
  private readonly headers: Record<string, string>;
  private readonly agent: HttpAgent;
  private readonly timeoutMs: number;
  private readonly calls = new ExportCalls();

  constructor(url: string, headers: Readonly<Record<string, string>>, timeoutMs = 10_000, tls?: TracingTls) {
    this.url = new URL(url);
    this.headers = { ...headers, 'content-type': 'application/x-protobuf' };
    const https = this.url.protocol === 'https:';
    this.agent = https ? new HttpsAgent({ keepAlive: true, maxSockets: 2, ...collectorTlsOptions(tls) }) : new HttpAgent({ keepAlive: true, maxSockets: 2 });
    this.timeoutMs = timeoutMs;
  }

  export(body: Buffer, done: (result: ExportResult) => void): void {
    let req: ClientRequest | undefined;
    const settle = this.calls.begin(done, this.timeoutMs, `OTLP/HTTP export to ${this.url.href}`, () => req?.destroy());
    const send = this.url.protocol === 'https:' ? httpsRequest : httpRequest;
    try {
      req = send(this.url, { method: 'POST', agent: this.agent, headers: { ...this.headers, 'content-length': String(body.length) } }, (res) => {
        const status = res.statusCode ?? 0;
        const ok = status >= 200 && status < 300;
        // An accepted export's answer may carry a partial success (spans rejected): its first bytes are kept.
        const kept: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          if (!ok || size >= MAX_ANSWER_BYTES) return;
          kept.push(chunk);
          size += chunk.length;
        });
        res.on('error', (error) => settle(failed(error)));
        res.on('end', () => {
          if (!ok) return settle({ code: FAILED, error: new Error(`OTLP/HTTP export to ${this.url.href} failed: HTTP ${status}`), errorType: String(status) });
          const partial = size > 0 && /protobuf/i.test(res.headers['content-type'] ?? 'protobuf') ? partialSuccess(Buffer.concat(kept)) : undefined;
          settle(partial ? { code: SUCCESS, rejected: partial.rejected, rejectedReason: partial.message } : { code: SUCCESS });
        });
      });
      req.on('error', (error) => settle(failed(error)));
      req.end(body);
    } catch (error) {
      settle(failed(error as Error));
    }
  }

  async forceFlush(): Promise<void> {
    await this.calls.drain();
  }

  async shutdown(): Promise<void> {
    await this.forceFlush();
    this.agent.destroy();
  }
}
