import type { ExchangeImpl } from '../runtime/exchange-impl.ts';
import type { LogSink } from './logger.ts';
import { formatLine } from './logger.ts';

/** One `request` line per request at info (BEHAVIOUR.md §6.1 field names), written in batches. */
export class AccessLog {
  private readonly sink: LogSink;
  enabled: boolean;
  format: 'json' | 'text';

  constructor(sink: LogSink, enabled: boolean, format: 'json' | 'text') {
    this.sink = sink;
    this.enabled = enabled;
    this.format = format;
  }

  record(ex: ExchangeImpl, durationMs: number): void {
    if (!this.enabled) return;
    const fields: Record<string, unknown> = {
      bind: ex.route.bind || undefined,
      listener: ex.route.listener || undefined,
      route: ex.route.name || undefined,
      'src.addr': ex.sourceAddress,
      'http.method': ex.method,
      'http.host': ex.clientAuthority,
      'http.path': ex.originalUrl,
      'http.status': ex.status,
      protocol: ex.protocol,
      'retry.attempt': ex.attempts > 1 ? ex.attempts - 1 : undefined,
      error: ex.errorMessage,
      duration: `${durationMs.toFixed(2)}ms`,
    };
    if (ex.fields) Object.assign(fields, ex.fields);
    this.sink.push(formatLine(this.format, 'info', 'request', fields));
  }
}
