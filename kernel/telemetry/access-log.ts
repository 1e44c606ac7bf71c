import type { Exchange, RouteInfo } from '../sdk/index.ts';
import type { LogSink } from './logger.ts';
import { formatLine, isoNow, textValue } from './logger.ts';
import { loggedPath, logActivation, logValue } from './access-log-rules.ts';
import type { AccessLogRules } from './access-log-rules.ts';

export { loggedPath };


/** What the access log reads of a finished request: the runtime's exchange, seen from this lower layer. */
export interface LoggedExchange extends Exchange {
  /** The client's Host header as received. */
  readonly clientAuthority: string;
  readonly status: number;
  readonly attempts: number;
  readonly errorMessage: string | undefined;
  readonly fields: Readonly<Record<string, string | number | boolean>> | undefined;
  /** The headers sent with the response; undefined when none was written (the client left first). */
  readonly replyHeaders: Readonly<Record<string, unknown>> | undefined;
  /** The client's TLS SNI name (`tls.sni`, BEHAVIOUR 6.1); undefined over cleartext or without one. */
  readonly tlsSni?: string | undefined;
  /** The request's span when tracing: its ids are logged as `trace_id` and `span_id`. */
  readonly span: { spanContext(): { traceId: string; spanId: string } } | undefined;
}


/**
 * `http.version` (BEHAVIOUR 6.1) as Envoy's `%PROTOCOL%` writes it (`HTTP/2`, `HTTP/1.0`); left out for HTTP/1.1, the
 * usual case (ADR 0141), so those lines stay as they were.
 */
export function loggedVersion(ex: Exchange): string | undefined {
  const version = (ex.req as { httpVersion?: string } | undefined)?.httpVersion;
  if (version === undefined || version === '1.1') return undefined;
  return version === '2.0' ? 'HTTP/2' : `HTTP/${version}`;
}

/**
 * `n.toFixed(2)` for a duration in ms, from integers: `toFixed` cost about 0.2 µs per line here. The last digit of a
 * value lying on a half may differ from `toFixed`'s (both are within rounding of the binary value).
 */
export function fixed2(n: number): string {
  if (!(n >= 0 && n < 1e12)) return n.toFixed(2);
  const hundredths = Math.round(n * 100);
  const frac = hundredths % 100;
  return `${(hundredths - frac) / 100}.${frac < 10 ? '0' : ''}${frac}`;
}

const REQUEST = ' INFO  request';
const METHOD = Buffer.from(' http.method=');
const HOST = Buffer.from(' http.host=');
const PATH = Buffer.from(' http.path=');
const VERSION = Buffer.from(' http.version=');
const STATUS = Buffer.from(' http.status=');
const PROTOCOL = Buffer.from(' protocol=');
const SNI = Buffer.from(' tls.sni=');
const REQUEST_ID = Buffer.from(' request.id=');
const TRACE_ID = Buffer.from(' trace_id=');
const SPAN_ID = Buffer.from(' span_id=');
const RETRY = Buffer.from(' retry.attempt=');
const ERROR = Buffer.from(' error=');
const DURATION = Buffer.from(' duration=');
const MS = Buffer.from('ms');
const SPACE = Buffer.from(' ');
const EQUALS = Buffer.from('=');


/** A receiver of each request's log fields; while `full`, requests only count themselves in `dropped`. */
export interface AccessLogTap {
  readonly full: boolean;
  dropped: number;
  push(fields: Record<string, unknown>): void;
}

/**
 * One `request` line per request at info (BEHAVIOUR.md §6.1 field names), written in batches. The text line is
 * written straight into the sink's buffer, without an intermediate object or string: it runs once per request.
 */
export class AccessLog {
  private readonly sink: LogSink;
  enabled: boolean;
  format: 'json' | 'text';
  /** `config.logging.filter` / `fields`; null (the usual case) keeps the fast path below. */
  rules: AccessLogRules | null = null;
  /** The admin UI's live tail, set only while a browser watches: each request's log fields (credentials hidden). */
  tap: AccessLogTap | null = null;
  private readonly routeParts = new WeakMap<RouteInfo, Buffer>();

  constructor(sink: LogSink, enabled: boolean, format: 'json' | 'text') {
    this.sink = sink;
    this.enabled = enabled;
    this.format = format;
  }

  record(ex: LoggedExchange, durationMs: number): void {
    if (this.tap !== null) {
      if (this.tap.full) this.tap.dropped++;
      else this.tap.push(this.fields(ex, durationMs, Date.now()));
    }
    if (!this.enabled) return;
    if (this.rules !== null) {
      this.recordWithRules(ex, durationMs, this.rules);
      return;
    }
    if (this.format === 'json') {
      this.sink.push(formatLine('json', 'info', 'request', this.fields(ex, durationMs)));
      return;
    }
    // Written into the sink's buffer field by field: the same bytes as `key=${textValue(v)}` concatenated.
    const b = this.sink.line;
    b.raw(isoNow());
    b.bytes(this.routePart(ex.route));
    b.raw(ex.sourceAddress);
    b.bytes(METHOD);
    b.raw(ex.method);
    b.bytes(HOST);
    b.value(ex.clientAuthority);
    b.bytes(PATH);
    b.value(loggedPath(ex.originalUrl));
    const version = loggedVersion(ex);
    if (version !== undefined) {
      b.bytes(VERSION);
      b.raw(version);
    }
    b.bytes(STATUS);
    b.uint(ex.status);
    b.bytes(PROTOCOL);
    b.raw(ex.protocol);
    const sni = ex.tlsSni;
    if (sni !== undefined) {
      b.bytes(SNI);
      b.value(sni);
    }
    b.bytes(REQUEST_ID);
    b.raw(ex.requestId);
    if (ex.span !== undefined) {
      const sc = ex.span.spanContext();
      b.bytes(TRACE_ID);
      b.raw(sc.traceId);
      b.bytes(SPAN_ID);
      b.raw(sc.spanId);
    }
    if (ex.attempts > 1) {
      b.bytes(RETRY);
      b.uint(ex.attempts - 1);
    }
    if (ex.errorMessage !== undefined) {
      b.bytes(ERROR);
      b.value(ex.errorMessage);
    }
    b.bytes(DURATION);
    b.fixed2(durationMs);
    b.bytes(MS);
    const extra = ex.fields;
    if (extra) {
      for (const k in extra) {
        b.bytes(SPACE);
        b.raw(k);
        b.bytes(EQUALS);
        b.value(extra[k]);
      }
    }
    b.newline();
    this.sink.lineDone();
  }

  /** ` bind=... listener=... route=...` of a route, formatted once per route (a route's info lives as long as its snapshot). */
  private routePart(route: RouteInfo): Buffer {
    let part = this.routeParts.get(route);
    if (part === undefined) {
      const rule = route.ruleName ? ` route_rule=${textValue(route.ruleName)}` : '';
      const text = route.bind ? ` bind=${route.bind} listener=${textValue(route.listener)}${rule} route=${textValue(route.name)}` : '';
      part = Buffer.from(`${REQUEST}${text} src.addr=`);
      this.routeParts.set(route, part);
    }
    return part;
  }

  /**
   * The second line of an upgrade whose connection was relayed (ADR 0055): `upgrade closed`, written when the
   * connection closes, with the request line's fields, the connection's duration (from the 101) and how it ended.
   * `config.logging` rules apply as to the request line; `span_id` is the connection's span when it has one.
   */
  recordUpgradeEnd(ex: LoggedExchange, durationMs: number, extra: Record<string, string | number>, spanId: string | undefined): void {
    if (!this.enabled) return;
    const rules = this.rules;
    if (rules !== null && !this.kept(ex, rules)) return;
    const fields = this.fields(ex, durationMs);
    if (spanId !== undefined) fields.span_id = spanId;
    Object.assign(fields, extra);
    if (rules !== null) this.applyRules(ex, fields, rules);
    this.sink.push(formatLine(this.format, 'info', 'upgrade closed', fields));
  }

  /** `config.logging.filter`'s verdict (no filter: kept). */
  private kept(ex: LoggedExchange, rules: AccessLogRules): boolean {
    if (rules.filter === undefined) return true;
    try {
      return rules.filter.evaluateIn(logActivation(ex)) !== false;
    } catch {
      return true; // A filter that cannot decide (a missing header) logs: losing lines is the worse failure.
    }
  }

  /** The filter decides; added fields are evaluated against one activation with credentials hidden. */
  private recordWithRules(ex: LoggedExchange, durationMs: number, rules: AccessLogRules): void {
    let activation: Record<string, unknown> | undefined;
    if (rules.filter !== undefined) {
      activation = logActivation(ex);
      let keep: unknown;
      try {
        keep = rules.filter.evaluateIn(activation);
      } catch {
        keep = true; // A filter that cannot decide (a missing header) logs: losing lines is the worse failure.
      }
      if (keep === false) return;
    }
    const fields = this.fields(ex, durationMs);
    this.applyRules(ex, fields, rules, activation);
    this.sink.push(formatLine(this.format, 'info', 'request', fields));
  }

  /** `config.logging.fields`: added fields (CEL, over one activation) and removed names. */
  private applyRules(ex: LoggedExchange, fields: Record<string, unknown>, rules: AccessLogRules, activation?: Record<string, unknown>): void {
    if (rules.add.length > 0) {
      activation ??= logActivation(ex);
      for (const [name, expression] of rules.add) {
        try {
          fields[name] = logValue(expression.evaluateIn(activation));
        } catch {
          fields[name] = undefined;
        }
      }
    }
    for (const name of rules.remove) fields[name] = undefined;
  }

  /** The line's fields; with `tailTime`, the live tail's event (its `time` first, `duration_ms` numeric), built once. */
  private fields(ex: LoggedExchange, durationMs: number, tailTime?: number): Record<string, unknown> {
    const json = tailTime !== undefined || this.format === 'json';
    const fields: Record<string, unknown> = {
      time: tailTime,
      bind: ex.route.bind || undefined,
      listener: ex.route.listener || undefined,
      route_rule: ex.route.ruleName,
      route: ex.route.name || undefined,
      'src.addr': ex.sourceAddress,
      'http.method': ex.method,
      'http.host': ex.clientAuthority,
      'http.path': loggedPath(ex.originalUrl),
      'http.version': loggedVersion(ex),
      'http.status': ex.status,
      protocol: ex.protocol,
      'tls.sni': ex.tlsSni,
      'request.id': ex.requestId,
      'retry.attempt': ex.attempts > 1 ? ex.attempts - 1 : undefined,
      error: ex.errorMessage,
      // JSON: a number (ms, two decimals) for log pipelines; text keeps the reference's `duration=1.23ms`.
      duration_ms: json ? Math.round(durationMs * 100) / 100 : undefined,
      duration: json ? undefined : `${durationMs.toFixed(2)}ms`,
    };
    if (ex.span !== undefined) {
      const sc = ex.span.spanContext();
      fields.trace_id = sc.traceId;
      fields.span_id = sc.spanId;
    }
    if (ex.fields) Object.assign(fields, ex.fields);
    return fields;
  }
}
