import type { ExchangeImpl } from '../runtime/exchange-impl.ts';
import type { LogSink } from './logger.ts';
import { formatLine, isoNow, textValue } from './logger.ts';

/**
 * Query parameters that carry credentials (`access_token`, `api_key`, `sig`, OAuth `code`, …): their values are
 * not written to the access log (ADR 0017). Compiled once; only paths with a query run it.
 */
const CREDENTIAL_PARAM = /([?&])([^=&#]*(?:token|secret|key|passw|auth|credential|signature|session|jwt)[^=&#]*|sig|code|sid)=[^&#]*/gi;

/** The request path as logged: credentials in the query string replaced. */
export function loggedPath(url: string): string {
  return url.includes('?') ? url.replace(CREDENTIAL_PARAM, '$1$2=<redacted>') : url;
}

/**
 * One `request` line per request at info (BEHAVIOUR.md §6.1 field names), written in batches. The text line is
 * built by concatenation, without an intermediate object: it runs once per request.
 */
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
    if (this.format === 'json') {
      this.sink.push(formatLine('json', 'info', 'request', this.fields(ex, durationMs)));
      return;
    }
    const route = ex.route;
    let line = `${isoNow()} INFO  request`;
    if (route.bind) line += ` bind=${route.bind} listener=${textValue(route.listener)} route=${textValue(route.name)}`;
    line += ` src.addr=${ex.sourceAddress} http.method=${ex.method} http.host=${textValue(ex.clientAuthority)} http.path=${textValue(loggedPath(ex.originalUrl))} http.status=${ex.status} protocol=${ex.protocol}`;
    if (ex.attempts > 1) line += ` retry.attempt=${ex.attempts - 1}`;
    if (ex.errorMessage !== undefined) line += ` error=${textValue(ex.errorMessage)}`;
    line += ` duration=${durationMs.toFixed(2)}ms`;
    const extra = ex.fields;
    if (extra) for (const k in extra) line += ` ${k}=${textValue(extra[k])}`;
    this.sink.push(`${line}\n`);
  }

  private fields(ex: ExchangeImpl, durationMs: number): Record<string, unknown> {
    const fields: Record<string, unknown> = {
      bind: ex.route.bind || undefined,
      listener: ex.route.listener || undefined,
      route: ex.route.name || undefined,
      'src.addr': ex.sourceAddress,
      'http.method': ex.method,
      'http.host': ex.clientAuthority,
      'http.path': loggedPath(ex.originalUrl),
      'http.status': ex.status,
      protocol: ex.protocol,
      'retry.attempt': ex.attempts > 1 ? ex.attempts - 1 : undefined,
      error: ex.errorMessage,
      duration: `${durationMs.toFixed(2)}ms`,
    };
    if (ex.fields) Object.assign(fields, ex.fields);
    return fields;
  }
}
