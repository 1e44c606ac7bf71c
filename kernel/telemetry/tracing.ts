/**
 * The kernel's tracer (docs/observability.md "Traces", ADR 0037), behind `@opentelemetry/api` only. This module is
 * imported only when `config.tracing` is set (tracing-sdk.ts loads it with the SDK): a gateway without tracing
 * never loads the API either, and its hot path reads one null field.
 */
import { context, isSpanContextValid, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { Attributes, Context, Span, TextMapPropagator, Tracer } from '@opentelemetry/api';
import type { IncomingHttpHeaders } from 'node:http';
import type { Exchange, PluginSpan, SpanAttributes } from '../sdk/index.ts';
import { exchangeState } from '../exchange/kernel-exchange.ts';

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
  readonly route: { readonly name: string; readonly listener: string; readonly bind: number | string };
  readonly matchedPrefix: string | undefined;
  readonly status: number;
  readonly errorMessage: string | undefined;
  readonly requestId: string;
  /** Fields policies added to the access log (`a2a.method`, `a2a.context.id`, `llm.model`, `jwt.sub`, …). */
  readonly fields: Readonly<Record<string, string | number | boolean>> | undefined;
  span: Span | undefined;
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

/** `http.route` as the reference names the span: a prefix `/x` is `/x/*`, `/` is `/*`. */
function routeTemplate(prefix: string | undefined): string | undefined {
  if (prefix === undefined) return undefined;
  return prefix === '/' ? '/*' : `${prefix.replace(/\/+$/, '')}/*`;
}

export class Tracing {
  readonly tracer: Tracer;
  /** `config.tracing.captureMessageContent`: plugins may put message content on spans. */
  readonly captureMessageContent: boolean;
  private readonly propagator: TextMapPropagator;
  private readonly stop: () => Promise<void>;

  constructor(tracer: Tracer, propagator: TextMapPropagator, stop: () => Promise<void>, captureMessageContent = false) {
    this.tracer = tracer;
    this.captureMessageContent = captureMessageContent;
    this.propagator = propagator;
    this.stop = stop;
  }

  /**
   * Start the request's SERVER span, parented on the client's `traceparent` (and carrying its `baggage`), and run
   * `serve` with it active: policy calls, upstream attempts and plugin spans made inside become its children.
   */
  serve(ex: TracedExchange, serve: () => void): void {
    const parent = ex.headers.traceparent === undefined ? ROOT_CONTEXT : this.propagator.extract(ROOT_CONTEXT, ex.headers, headerGetter);
    const span = this.tracer.startSpan(ex.method, { kind: SpanKind.SERVER }, parent);
    ex.span = span;
    context.with(trace.setSpan(parent, span), serve);
  }

  /** End the SERVER span with what is known once the response is done (route, status, error). */
  finish(ex: TracedExchange): void {
    const span = ex.span!;
    if (span.isRecording()) {
      const template = routeTemplate(ex.matchedPrefix);
      if (ex.route.name) span.updateName(template ? `${ex.method} ${template}` : `${ex.method} ${ex.route.name}`);
      const attrs: Attributes = {
        'http.request.method': ex.method,
        'url.path': ex.path,
        'url.scheme': ex.scheme,
        'server.address': ex.clientAuthority,
        'client.address': ex.sourceAddress,
        'client.port': ex.sourcePort,
        'network.protocol.version': ex.req.httpVersion,
        'http.response.status_code': ex.status,
        'request.id': ex.requestId,
      };
      const ua = ex.headers['user-agent'];
      if (ua !== undefined) attrs['user_agent.original'] = ua;
      if (template !== undefined) attrs['http.route'] = template;
      if (ex.route.name) {
        attrs.route = ex.route.name;
        attrs.listener = ex.route.listener;
        attrs.bind = ex.route.bind;
      }
      // The access log's policy fields too, as the reference puts the access log on its span (A2A method and
      // context id, MCP method, LLM model and tokens).
      const fields = ex.fields;
      if (fields !== undefined) for (const k in fields) attrs[k] = fields[k];
      span.setAttributes(attrs);
      if (ex.status >= 500 || ex.errorMessage !== undefined) {
        if (ex.status >= 500) span.setAttribute('error.type', String(ex.status));
        span.setStatus({ code: SpanStatusCode.ERROR, message: ex.errorMessage });
      }
    }
    span.end();
  }

  /**
   * A CLIENT span for one call to an upstream (a forwarded attempt or a call a plugin makes), child of the active
   * span; its context is written into `headers` (`traceparent`, `baggage`) so the upstream joins the trace.
   */
  client(method: string, origin: TracedOrigin, path: string, headers: Record<string, unknown>, extra?: Attributes, parent?: Context): Span {
    const active = parent ?? context.active();
    const span = this.tracer.startSpan(method, { kind: SpanKind.CLIENT }, active);
    if (span.isRecording()) {
      const q = path.indexOf('?');
      span.setAttributes({
        'http.request.method': method,
        'server.address': origin.host,
        'server.port': origin.port,
        // No query string: it may carry credentials.
        'url.full': origin.href.replace(/\/$/, '') + (q === -1 ? path : path.slice(0, q)),
        ...extra,
      });
    }
    // W3C `traceparent` written directly (the propagator builds a context for it); a client's `baggage` or a
    // `tracestate` goes through the propagator, as those are rare.
    const sc = span.spanContext();
    if (sc.traceState !== undefined || propagation.getBaggage(active) !== undefined) this.propagator.inject(trace.setSpan(active, span), headers, headerSetter);
    else if (isSpanContextValid(sc)) headers.traceparent = `00-${sc.traceId}-${sc.spanId}-0${(sc.traceFlags & 0xff).toString(16)}`;
    return span;
  }

  /** End a CLIENT span with the upstream's status, or the error that ended the call. */
  endClient(span: Span, status: number | undefined, err?: unknown): void {
    if (status !== undefined) {
      span.setAttribute('http.response.status_code', status);
      if (status >= 500) {
        span.setAttribute('error.type', String(status));
        span.setStatus({ code: SpanStatusCode.ERROR });
      }
    } else if (err !== undefined) {
      const e = err as { code?: string; name?: string; message?: string };
      span.setAttribute('error.type', e.code ?? e.name ?? 'error');
      span.setStatus({ code: SpanStatusCode.ERROR, message: e.message });
    }
    span.end();
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

