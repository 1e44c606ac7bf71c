/**
 * The kernel's own spans and tracer behind `@opentelemetry/api` (ADR 0055), in place of the SDK's: a span is one
 * object with its ids, name, kind, start and end as epoch milliseconds (numbers, not HrTime pairs) and its
 * attributes in one flat array (key, value, key, value), written straight to protobuf by otlp-encode.ts. The
 * SDK's span did attribute validation and limits, `otel.sdk.span.*` self-metrics, HrTime arithmetic and a
 * span-processor fan-out on every start and end: a third of tracing's CPU per request (docs/perf.md).
 */
import { context, isSpanContextValid, SpanKind, trace, TraceFlags } from '@opentelemetry/api';
import type { Attributes, AttributeValue, Context, Exception, Link, Span, SpanContext, SpanOptions, SpanStatus, TimeInput, Tracer } from '@opentelemetry/api';
import type { Writer } from './otlp-encode.ts';
import { readableStack } from './readable-stack.ts';

const ORIGIN = performance.timeOrigin;

/** Now as epoch milliseconds, sub-millisecond (the monotonic clock from the process's time origin). */
export function nowMs(): number {
  return ORIGIN + performance.now();
}

/** An API time input as epoch milliseconds (numbers below the time origin are `performance.now()` readings). */
function toMs(t: TimeInput | undefined): number {
  if (t === undefined) return nowMs();
  if (typeof t === 'number') return t < ORIGIN ? ORIGIN + t : t;
  if (t instanceof Date) return t.getTime();
  return t[0] * 1e3 + t[1] / 1e6;
}

/** Where ended spans go (the batcher). */
export interface SpanSink {
  onEnd(span: LeanSpan): void;
}

export interface LeanEvent {
  readonly name: string;
  readonly timeMs: number;
  readonly attributes: Attributes | undefined;
}

/** A sampled span: what the encoder writes. */
export class LeanSpan implements Span {
  readonly ctx: SpanContext;
  readonly parentSpanId: string | undefined;
  readonly parentRemote: boolean;
  name: string;
  readonly kind: SpanKind;
  readonly startMs: number;
  endMs = 0;
  /** Attributes: key, value, key, value, ... (no key twice). */
  readonly attrs: (string | AttributeValue)[] = [];
  /**
   * Attributes the encoder writes from where they live when the span ends, before `attrs`: the kernel's SERVER span
   * points at its exchange (`directOf`) instead of copying its request attributes into `attrs` (ADR 0062).
   */
  direct: ((w: Writer, owner: unknown) => void) | undefined = undefined;
  directOf: unknown = undefined;
  statusCode = 0;
  statusMessage: string | undefined = undefined;
  events: LeanEvent[] | undefined = undefined;
  links: Link[] | undefined = undefined;
  private readonly sink: SpanSink;

  constructor(sink: SpanSink, ctx: SpanContext, parent: SpanContext | undefined, name: string, kind: SpanKind, startMs: number) {
    this.sink = sink;
    this.ctx = ctx;
    this.parentSpanId = parent?.spanId;
    this.parentRemote = parent?.isRemote === true;
    this.name = name;
    this.kind = kind;
    this.startMs = startMs;
  }

  spanContext(): SpanContext {
    return this.ctx;
  }

  /** Add an attribute the span cannot have yet (the kernel's own, on a span it just made). */
  append(key: string, value: AttributeValue): void {
    this.attrs.push(key, value);
  }

  setAttribute(key: string, value: AttributeValue | undefined): this {
    if (value === undefined || value === null || this.endMs !== 0) return this;
    const a = this.attrs;
    for (let i = 0; i < a.length; i += 2) {
      if (a[i] === key) {
        a[i + 1] = value;
        return this;
      }
    }
    a.push(key, value);
    return this;
  }

  setAttributes(attributes: Attributes): this {
    for (const k in attributes) this.setAttribute(k, attributes[k]);
    return this;
  }

  addEvent(name: string, attributesOrTime?: Attributes | TimeInput, time?: TimeInput): this {
    if (this.endMs !== 0) return this;
    const isTime = typeof attributesOrTime === 'number' || Array.isArray(attributesOrTime) || attributesOrTime instanceof Date;
    (this.events ??= []).push({ name, timeMs: toMs(isTime ? (attributesOrTime as TimeInput) : time), attributes: isTime ? undefined : (attributesOrTime as Attributes | undefined) });
    return this;
  }

  addLink(link: Link): this {
    // After `end` the span may already be encoded (span-batcher.ts): nothing changes it then, as the API says.
    if (this.endMs !== 0) return this;
    (this.links ??= []).push(link);
    return this;
  }

  addLinks(links: Link[]): this {
    for (const l of links) this.addLink(l);
    return this;
  }

  setStatus(status: SpanStatus): this {
    if (this.endMs !== 0) return this;
    this.statusCode = status.code;
    this.statusMessage = status.message;
    return this;
  }

  updateName(name: string): this {
    if (this.endMs === 0) this.name = name;
    return this;
  }

  end(endTime?: TimeInput): void {
    if (this.endMs !== 0) return;
    const end = endTime === undefined ? nowMs() : toMs(endTime);
    this.endMs = end < this.startMs ? this.startMs : end;
    this.sink.onEnd(this);
  }

  isRecording(): boolean {
    return this.endMs === 0;
  }

  recordException(exception: Exception, time?: TimeInput): void {
    const e = typeof exception === 'string' ? { message: exception } : (exception as { name?: string; message?: string; code?: string | number; stack?: string });
    const attributes: Attributes = {};
    if (e.code !== undefined) attributes['exception.type'] = String(e.code);
    else if (e.name !== undefined) attributes['exception.type'] = e.name;
    if (e.message !== undefined) attributes['exception.message'] = e.message;
    if (e.stack !== undefined) attributes['exception.stacktrace'] = readableStack(e.stack);
    this.addEvent('exception', attributes, time);
  }
}

/** Trace-id ratio sampling as the SDK's TraceIdRatioBasedSampler decides it (gateways and SDKs agree on a trace). */
export function ratioSampler(ratio: number): (traceId: string) => boolean {
  if (!(ratio > 0)) return () => false;
  if (ratio >= 1) return () => true;
  const upper = Math.floor(ratio * 4294967295);
  return (traceId) => {
    let acc = 0;
    for (let i = 0; i < 32; i += 8) {
      let part = 0;
      for (let j = 0; j < 8; j++) {
        const c = traceId.charCodeAt(i + j);
        part = (part << 4) | (c < 58 ? c - 48 : c < 71 ? c - 55 : c - 87);
      }
      acc = (acc ^ part) >>> 0;
    }
    return acc < upper;
  };
}

export interface IdSource {
  generateTraceId(): string;
  generateSpanId(): string;
}

/**
 * The tracer: sampling (BEHAVIOUR.md §6.3: a client's sampled parent at `clientSampling`, a request without a
 * trace at `randomSampling`, an unsampled parent respected, local parents followed), ids, and a LeanSpan for a
 * sampled span or the API's non-recording span (which still carries ids for `traceparent`) otherwise.
 */
export class LeanTracer implements Tracer {
  private readonly sink: SpanSink;
  private readonly ids: IdSource;
  private readonly random: (traceId: string) => boolean;
  private readonly client: (traceId: string) => boolean;

  constructor(sink: SpanSink, ids: IdSource, randomRatio: number, clientRatio: number) {
    this.sink = sink;
    this.ids = ids;
    this.random = ratioSampler(randomRatio);
    this.client = ratioSampler(clientRatio);
  }

  /** A span of `kind`, child of `parentSpan` when given, else of the span in `parent` (none: a new trace). */
  start(name: string, kind: SpanKind, parent: Context, startMs?: number, parentSpan?: Span): Span {
    const ps = parentSpan ?? trace.getSpan(parent);
    const p = ps?.spanContext();
    // A parent this tracer made has valid ids by construction: the API's check is two regex tests.
    const valid = ps instanceof LeanSpan || (p !== undefined && isSpanContextValid(p));
    const traceId = valid ? p!.traceId : this.ids.generateTraceId();
    const spanId = this.ids.generateSpanId();
    let sampled: boolean;
    if (!valid) sampled = this.random(traceId);
    else if ((p!.traceFlags & TraceFlags.SAMPLED) === 0) sampled = false;
    else sampled = p!.isRemote ? this.client(traceId) : true;
    const traceState = valid ? p!.traceState : undefined;
    if (!sampled) return trace.wrapSpanContext({ traceId, spanId, traceFlags: TraceFlags.NONE, traceState });
    return new LeanSpan(this.sink, { traceId, spanId, traceFlags: TraceFlags.SAMPLED, traceState }, valid ? p : undefined, name, kind, startMs ?? nowMs());
  }

  startSpan(name: string, options?: SpanOptions, ctx?: Context): Span {
    let parent = ctx ?? context.active();
    if (options?.root) parent = trace.deleteSpan(parent);
    const span = this.start(name, options?.kind ?? SpanKind.INTERNAL, parent, options?.startTime === undefined ? undefined : toMs(options.startTime));
    if (span instanceof LeanSpan) {
      if (options?.attributes) span.setAttributes(options.attributes);
      if (options?.links) span.addLinks(options.links);
    }
    return span;
  }

  startActiveSpan<F extends (span: Span) => unknown>(name: string, ...args: unknown[]): ReturnType<F> {
    const fn = args[args.length - 1] as F;
    const options = (args.length > 1 ? args[0] : undefined) as SpanOptions | undefined;
    const ctx = (args.length > 2 ? args[1] : undefined) as Context | undefined;
    const parent = ctx ?? context.active();
    const span = this.startSpan(name, options, parent);
    return context.with(trace.setSpan(parent, span), fn as (s: Span) => ReturnType<F>, undefined, span);
  }
}
