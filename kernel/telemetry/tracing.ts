/**
 * The kernel's tracer (docs/observability.md "Traces", ADR 0037), behind `@opentelemetry/api` only. This module is
 * imported only when `config.tracing` is set (tracing-sdk.ts loads it with the SDK): a gateway without tracing
 * never loads the API either, and its hot path reads one null field.
 */
import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { Attributes, AttributeValue, Context, Span, TextMapPropagator } from '@opentelemetry/api';
import type { IncomingHttpHeaders } from 'node:http';
import type { Exchange, PluginSpan, SpanAttributes } from '../sdk/index.ts';
import { exchangeState } from '../exchange/kernel-exchange.ts';
import { LeanSpan } from './lean-span.ts';
import type { LeanTracer } from './lean-span.ts';
import type { Writer } from './otlp-encode.ts';
import { GRPC_STATUS_NAMES, grpcServerError } from './grpc-status.ts';

/** What the server span reads of a finished request (a subset of the runtime's exchange). */
export interface TracedExchange {
  readonly method: string;
  readonly path: string;
  readonly scheme: string;
  readonly headers: IncomingHttpHeaders;
  readonly clientAuthority: string;
  readonly sourceAddress: string;
  readonly sourcePort: number;
  readonly req: { readonly httpVersion: string };
  readonly route: { readonly name: string; readonly listener: string; readonly bind: number | string; readonly ruleName?: string | undefined };
  readonly matchedPrefix: string | undefined;
  readonly status: number;
  readonly errorMessage: string | undefined;
  readonly requestId: string;
  /** Fields policies added to the access log (`a2a.method`, `a2a.context.id`, `llm.model`, `jwt.sub`, ...). */
  readonly fields: Readonly<Record<string, string | number | boolean>> | undefined;
  span: Span | undefined;
}

/** Where a request's attempts find their parent (the kernel's ExchangeState). */
export interface ExplicitTrace {
  span: Span | undefined;
  traceParent: Context | undefined;
  traceRoot: Context | undefined;
}

/** An upstream origin as the forwarder parsed it. */
export interface TracedOrigin {
  readonly href: string;
  readonly host: string;
  readonly port: number;
}

const headerGetter = {
  get(carrier: IncomingHttpHeaders, key: string): string | string[] | undefined {
    return carrier[key];
  },
  keys(carrier: IncomingHttpHeaders): string[] {
    return Object.keys(carrier);
  },
};
const headerSetter = {
  set(carrier: Record<string, unknown>, key: string, value: string): void {
    carrier[key] = value;
  },
};

/** Attributes without their undefined entries. */
function clean(attributes: SpanAttributes): Attributes {
  const out: Attributes = {};
  for (const k in attributes) {
    const v = attributes[k];
    if (v !== undefined) out[k] = v as string | number | boolean | string[];
  }
  return out;
}

/** The methods OTel's HTTP conventions know (RFC 9110 and PATCH); any other is `_OTHER` on a span. */
const KNOWN_METHODS = new Set(['CONNECT', 'DELETE', 'GET', 'HEAD', 'OPTIONS', 'PATCH', 'POST', 'PUT', 'TRACE']);

/** A span's name for `method`: the method, or `HTTP` for one OTel does not know. */
function methodName(method: string): string {
  return KNOWN_METHODS.has(method) ? method : 'HTTP';
}

/** `http.request.method` (`_OTHER` for a method OTel does not know, the method then in `http.request.method_original`). */
function putMethod<T>(method: string, to: T, put: (to: T, key: string, value: AttributeValue) => void): void {
  if (KNOWN_METHODS.has(method)) return put(to, 'http.request.method', method);
  put(to, 'http.request.method', '_OTHER');
  put(to, 'http.request.method_original', method);
}

/** Route templates by matched prefix (prefixes come from the config: a bounded set). */
const templates = new Map<string, string>();

/** `http.route` as the reference names the span: a prefix `/x` is `/x/*`, `/` is `/*`. */
function routeTemplate(prefix: string | undefined): string | undefined {
  if (prefix === undefined) return undefined;
  let t = templates.get(prefix);
  if (t === undefined) {
    t = prefix === '/' ? '/*' : `${prefix.replace(/\/+$/, '')}/*`;
    if (templates.size < 1024) templates.set(prefix, t);
  }
  return t;
}

/**
 * `server.address` and `server.port` from the client's Host, as OTel's HTTP conventions split it (`[::1]:8080`:
 * `::1` and 8080); a port that is not a number is left out.
 */
const PORT = /^\d{1,5}$/;
function putAuthority<T>(authority: string, to: T, put: (to: T, key: string, value: AttributeValue) => void): void {
  const colon = authority.lastIndexOf(':');
  let host = authority;
  if (colon !== -1 && colon > authority.lastIndexOf(']')) {
    host = authority.slice(0, colon);
    const port = authority.slice(colon + 1);
    if (PORT.test(port) && Number(port) <= 65535) put(to, 'server.port', Number(port));
  }
  put(to, 'server.address', host.charCodeAt(0) === 0x5b && host.endsWith(']') ? host.slice(1, -1) : host);
}

/** The SERVER span's attributes of a finished request, each handed to `put` (a module function: no closure). */
function requestAttributes<T>(ex: TracedExchange, to: T, put: (to: T, key: string, value: AttributeValue) => void): void {
  putMethod(ex.method, to, put);
  // A CONNECT names an authority, not a path (RFC 9110 9.3.6): it is server.address and server.port alone.
  if (ex.method !== 'CONNECT') put(to, 'url.path', ex.path);
  put(to, 'url.scheme', ex.scheme);
  putAuthority(ex.clientAuthority, to, put);
  put(to, 'client.address', ex.sourceAddress);
  put(to, 'client.port', ex.sourcePort);
  // OTel writes HTTP/2 as `2` (node:http2 says `2.0`).
  const version = ex.req.httpVersion;
  put(to, 'network.protocol.version', version === '2.0' ? '2' : version);
  put(to, 'http.response.status_code', ex.status);
  put(to, 'request.id', ex.requestId);
  const ua = ex.headers['user-agent'];
  if (ua !== undefined) put(to, 'user_agent.original', ua);
  const template = routeTemplate(ex.matchedPrefix);
  if (template !== undefined) put(to, 'http.route', template);
  if (ex.route.name) {
    put(to, 'route', ex.route.name);
    put(to, 'listener', ex.route.listener);
    if (ex.route.ruleName) put(to, 'route_rule', ex.route.ruleName);
    put(to, 'bind', ex.route.bind);
  }
}

const toSpan = (span: Span, key: string, value: AttributeValue): void => void span.setAttribute(key, value);
const appendTo = (span: LeanSpan, key: string, value: AttributeValue): void => span.append(key, value);
const toWriter = (w: Writer, key: string, value: AttributeValue): void => w.attribute(9, key, value);

/** `LeanSpan.direct` of a request's SERVER span: its attributes written from the exchange as the span is encoded. */
function writeRequestAttributes(w: Writer, ex: TracedExchange): void {
  requestAttributes(ex, w, toWriter);
}

export class Tracing {
  readonly tracer: LeanTracer;
  /** `config.tracing.captureMessageContent`: plugins may put message content on spans. */
  readonly captureMessageContent: boolean;
  private readonly propagator: TextMapPropagator;
  private readonly stop: () => Promise<void>;

  constructor(tracer: LeanTracer, propagator: TextMapPropagator, stop: () => Promise<void>, captureMessageContent = false) {
    this.tracer = tracer;
    this.captureMessageContent = captureMessageContent;
    this.propagator = propagator;
    this.stop = stop;
  }

  /**
   * Start the request's SERVER span, parented on the client's `traceparent` (and carrying its `baggage`), without
   * entering its async context (ADR 0062): a route where nothing but the kernel runs passes the span explicitly to
   * its upstream attempt; any other route `enter`s the context once it is selected.
   */
  start(ex: TracedExchange & ExplicitTrace): void {
    const parent = ex.headers.traceparent === undefined ? ROOT_CONTEXT : this.propagator.extract(ROOT_CONTEXT, ex.headers, headerGetter);
    ex.span = this.tracer.start(methodName(ex.method), SpanKind.SERVER, parent);
    ex.traceRoot = parent;
  }

  /**
   * Run `fn` with the SERVER span `start` made active: policy calls, upstream attempts and plugin spans made inside
   * become its children (plugins find it through `context.active()`).
   */
  enter(ex: TracedExchange & ExplicitTrace, fn: () => void): void {
    const root = ex.traceRoot ?? ROOT_CONTEXT;
    ex.traceRoot = undefined;
    context.with(trace.setSpan(root, ex.span!), fn);
  }

  /** `start` and `enter` at once (WebSocket upgrades). */
  serve(ex: TracedExchange & ExplicitTrace, fn: () => void): void {
    this.start(ex);
    this.enter(ex, fn);
  }

  /**
   * The CLIENT span of an upstream attempt of a request (`state`: its kernel state): child of the plugin span that
   * took the attempts over (`PluginSpan.enclose`), else of the request's SERVER span passed explicitly when the
   * request runs without its async context, else of the active span.
   */
  attempt(method: string, origin: TracedOrigin, path: string, headers: Record<string, unknown>, extra: Attributes | undefined, state: ExplicitTrace | undefined): Span {
    if (state === undefined) return this.client(method, origin, path, headers, extra);
    if (state.traceParent !== undefined) return this.client(method, origin, path, headers, extra, state.traceParent);
    if (state.traceRoot !== undefined) return this.client(method, origin, path, headers, extra, state.traceRoot, state.span);
    return this.client(method, origin, path, headers, extra);
  }

  /** End the SERVER span with what is known once the response is done (route, status, error). */
  finish(ex: TracedExchange): void {
    const span = ex.span!;
    if (span.isRecording()) {
      const template = routeTemplate(ex.matchedPrefix);
      if (ex.route.name) span.updateName(`${methodName(ex.method)} ${template ?? ex.route.name}`);
      // The kernel's own span with nothing on it yet and no policy fields (the usual case): the encoder writes the
      // request's attributes straight from the exchange when the span ends, without an array or object per request
      // (ADR 0062). Otherwise through setAttribute, which replaces a key already there.
      if (span instanceof LeanSpan && span.attrs.length === 0 && span.direct === undefined && ex.fields === undefined) {
        span.direct = writeRequestAttributes as (w: Writer, owner: unknown) => void;
        span.directOf = ex;
      } else requestAttributes(ex, span, toSpan);
      // The access log's policy fields too, as the reference puts the access log on its span (A2A method and
      // context id, MCP method, LLM model and tokens); a field may repeat a name above, so through setAttribute.
      const fields = ex.fields;
      if (fields !== undefined) for (const k in fields) span.setAttribute(k, fields[k]!);
      // A gRPC call's (its status logged, ADR 0178): OTel's gRPC rules, whatever the HTTP 200 says.
      const grpcStatus = fields?.['grpc.status'];
      if (typeof grpcStatus === 'number') {
        if (grpcServerError(grpcStatus)) {
          span.setAttribute('error.type', GRPC_STATUS_NAMES[grpcStatus]!);
          span.setStatus({ code: SpanStatusCode.ERROR, message: ex.errorMessage });
        } else if (ex.errorMessage !== undefined) span.setAttribute('switchyard.error', ex.errorMessage);
      } else if (ex.status >= 500 || (ex.errorMessage !== undefined && ex.status < 400)) {
        // OTel HTTP conventions: a SERVER span is an ERROR on a 5xx, or on a failure behind a 1xx-3xx (a stream cut);
        // a 4xx leaves the status unset (a client's mistake, a refusal: not the server failing), its reason kept.
        if (ex.status >= 500) span.setAttribute('error.type', String(ex.status));
        span.setStatus({ code: SpanStatusCode.ERROR, message: ex.errorMessage });
      } else if (ex.errorMessage !== undefined) span.setAttribute('switchyard.error', ex.errorMessage);
    }
    span.end();
  }

  /**
   * An upgraded connection's INTERNAL span (ADR 0055), child of its upgrade's SERVER span (ended at the handshake):
   * from the 101 until the connection closes. Undefined when the request is not sampled.
   */
  startConnection(ex: TracedExchange, protocol: string): Span | undefined {
    const server = ex.span;
    // Ended already (so no longer recording): its sampled flag says whether the trace is kept.
    if (server === undefined || (server.spanContext().traceFlags & 1) === 0) return undefined;
    const template = routeTemplate(ex.matchedPrefix);
    const name = `${protocol === 'websocket' ? 'websocket' : 'upgrade'} ${template ?? ex.route.name}`;
    return this.tracer.start(name, SpanKind.INTERNAL, trace.setSpan(ROOT_CONTEXT, server));
  }

  /** End a connection's span with how it ended; an abnormal close (1006) or a server error (1011) is an ERROR. */
  endConnection(span: Span, attributes: Attributes, closeCode: number | undefined): void {
    span.setAttributes(attributes);
    if (closeCode === 1006 || closeCode === 1011) {
      span.setAttribute('error.type', String(closeCode));
      span.setStatus({ code: SpanStatusCode.ERROR });
    }
    span.end();
  }

  /**
   * A CLIENT span for one call to an upstream (a forwarded attempt or a call a plugin makes), child of the span in
   * `parent` (default: the active context), or of `parentSpan` when given (`parent` then carries only the client's
   * `baggage`); its context is written into `headers` (`traceparent`, `baggage`) so the upstream joins the trace.
   */
  client(method: string, origin: TracedOrigin, path: string, headers: Record<string, unknown>, extra?: Attributes, parent?: Context, parentSpan?: Span): Span {
    const active = parent ?? context.active();
    const span = this.tracer.start(methodName(method), SpanKind.CLIENT, active, undefined, parentSpan);
    if (span instanceof LeanSpan) {
      const q = path.indexOf('?');
      putMethod(method, span, appendTo);
      span.append('server.address', origin.host);
      span.append('server.port', origin.port);
      // No query string: it may carry credentials.
      span.append('url.full', (origin.href.endsWith('/') ? origin.href.slice(0, -1) : origin.href) + (q === -1 ? path : path.slice(0, q)));
      if (extra !== undefined) span.setAttributes(extra);
    }
    // W3C `traceparent` written directly (the propagator builds a context for it); a client's `baggage` or a
    // `tracestate` goes through the propagator, as those are rare.
    const sc = span.spanContext();
    if (sc.traceState !== undefined || propagation.getBaggage(active) !== undefined) this.propagator.inject(trace.setSpan(active, span), headers, headerSetter);
    // The tracer's spans (recording or not) always have valid ids.
    else headers.traceparent = `00-${sc.traceId}-${sc.spanId}-0${(sc.traceFlags & 0xff).toString(16)}`;
    // A client's `tracestate` without a valid `traceparent` belongs to no trace of ours: W3C Trace Context says to
    // discard it, not to send it beside the new trace (a valid parent's state was injected above); an empty one (no
    // valid member) is not sent either.
    if (headers.tracestate !== undefined && (sc.traceState === undefined || headers.tracestate === '')) delete headers.tracestate;
    return span;
  }

  /**
   * End a CLIENT span with the upstream's status and/or the error that ended the call (both: an answer the gateway
   * could not use, such as a 101 to the wrong protocol or a refusal whose body failed).
   */
  endClient(span: Span, status: number | undefined, err?: unknown, endTime?: number): void {
    if (status !== undefined) {
      span.setAttribute('http.response.status_code', status);
      if (status >= 500) {
        span.setAttribute('error.type', String(status));
        span.setStatus({ code: SpanStatusCode.ERROR });
      }
    }
    if (err !== undefined) {
      const e = err as { code?: string; name?: string; message?: string };
      if (status === undefined || status < 500) span.setAttribute('error.type', e.code ?? e.name ?? 'error');
      span.setStatus({ code: SpanStatusCode.ERROR, message: e.message });
    }
    span.end(endTime);
  }

  /** A child span of the active one, for plugins' own operations (an MCP method, an LLM call). */
  startSpan(name: string, kind: SpanKind, attributes?: Attributes, parent?: Context): Span {
    return this.tracer.startSpan(name, { kind, attributes }, parent ?? context.active());
  }

  /** `ctx.spans.start`: a span for a plugin's own operation, child of the active one. */
  pluginSpan(name: string, kind: 'internal' | 'server' | 'client', attributes?: SpanAttributes): PluginSpan {
    const active = context.active();
    const span = this.tracer.startSpan(name, { kind: kind === 'server' ? SpanKind.SERVER : kind === 'client' ? SpanKind.CLIENT : SpanKind.INTERNAL }, active);
    const recording = span.isRecording();
    if (recording && attributes) span.setAttributes(clean(attributes));
    const propagator = this.propagator;
    return {
      recording,
      setAttributes: (a) => {
        if (recording) span.setAttributes(clean(a));
      },
      rename: (name) => {
        if (recording) span.updateName(name);
      },
      end: (error) => {
        if (error !== undefined && recording) {
          const e = error as { code?: unknown; name?: string; message?: string };
          span.setAttribute('error.type', typeof error === 'string' ? error : String(e.code ?? e.name ?? 'error'));
          span.setStatus({ code: SpanStatusCode.ERROR, message: typeof error === 'string' ? undefined : e.message });
        }
        span.end();
      },
      inject: (carrier) => propagator.inject(trace.setSpan(active, span), carrier, headerSetter),
      run: (fn) => context.with(trace.setSpan(active, span), fn),
      enclose: (ex: Exchange) => {
        const state = exchangeState(ex);
        if (state !== undefined) state.traceParent = trace.setSpan(active, span);
      },
    };
  }

  /** Flush what is buffered and stop exporting. */
  shutdown(): Promise<void> {
    return this.stop();
  }
}

/** The gateway's tracing once started; upstream targets read it per call (null: off). */
export interface TracingHolder {
  tracing: Tracing | null;
}

