/**
 * OTLP trace protobuf (`ExportTraceServiceRequest`) written by hand in one pass into a buffer reused from export to
 * export (ADR 0049). The SDK's serializer walks every span twice (a size estimate, then the write), encodes strings
 * through TextEncoder and ids through a JS hex loop; this writes strings and ids with Buffer's native `write`.
 * Field numbers: opentelemetry-proto trace/v1/trace.proto and common/v1/common.proto. The tests against a real
 * Jaeger (test/e2e/tracing-*.test.ts) read back what it writes.
 */
import type { Attributes, AttributeValue } from '@opentelemetry/api';
import type { LeanSpan } from './lean-span.ts';

const HAS_IS_REMOTE = 0x100;
const IS_REMOTE = 0x200;

export class Writer {
  buf: Buffer;
  pos = 0;

  constructor(size = 64 * 1024) {
    this.buf = Buffer.allocUnsafe(size);
  }

  ensure(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.pos + n) size *= 2;
    const next = Buffer.allocUnsafe(size);
    this.buf.copy(next, 0, 0, this.pos);
    this.buf = next;
  }

  /** An unsigned varint below 2^53 (tags, lengths, counts, non-negative ints). */
  varint(v: number): void {
    this.ensure(10);
    const b = this.buf;
    while (v > 0x7f) {
      b[this.pos++] = (v & 0x7f) | 0x80;
      v = v > 0xffffffff ? Math.floor(v / 128) : v >>> 7;
    }
    b[this.pos++] = v;
  }

  tag(field: number, wire: number): void {
    this.varint((field << 3) | wire);
  }

  /** Opens a length-delimited field; one length byte reserved, moved by `close` when the content is longer. */
  open(field: number): number {
    this.tag(field, 2);
    this.ensure(1);
    return this.pos++;
  }

  close(at: number): void {
    const len = this.pos - at - 1;
    if (len < 0x80) {
      this.buf[at] = len;
      return;
    }
    const size = len < 0x4000 ? 2 : len < 0x200000 ? 3 : len < 0x10000000 ? 4 : 5;
    this.ensure(size - 1);
    this.buf.copyWithin(at + size, at + 1, this.pos);
    this.pos += size - 1;
    let v = len;
    let p = at;
    while (v > 0x7f) {
      this.buf[p++] = (v & 0x7f) | 0x80;
      v >>>= 7;
    }
    this.buf[p] = v;
  }

  string(field: number, s: string): void {
    this.tag(field, 2);
    const n = s.length;
    // Short ASCII strings (attribute keys, methods, paths, ids): copied by a JS loop, which costs less than a call
    // into Buffer's native write for each of the ~20 strings of a span.
    if (n < 0x80) {
      this.ensure(n + 1);
      const b = this.buf;
      const start = this.pos + 1;
      let i = 0;
      for (; i < n; i++) {
        const c = s.charCodeAt(i);
        if (c >= 0x80) break;
        b[start + i] = c;
      }
      if (i === n) {
        b[this.pos] = n;
        this.pos = start + n;
        return;
      }
    }
    this.ensure(1);
    const at = this.pos++;
    this.ensure(n * 3);
    this.pos += this.buf.write(s, this.pos, 'utf8');
    this.close(at);
  }

  /** A hex id (trace or span id) as bytes. */
  hex(field: number, id: string): void {
    this.tag(field, 2);
    const n = id.length >>> 1;
    this.varint(n);
    this.ensure(n);
    // A JS loop: ids are 8 or 16 bytes of hex (ours, or validated by the API's propagator). Without a branch per
    // digit: `c & 0xf` is a digit's value or a letter's minus 9, and `c >> 6` is 1 for letters only (random ids made
    // the `c < 58` test mispredict a third of the time; this loop is 2-3x faster, docs/perf.md session 7).
    const b = this.buf;
    let p = this.pos;
    for (let i = 0; i < id.length; i += 2) {
      const h = id.charCodeAt(i);
      const l = id.charCodeAt(i + 1);
      b[p++] = (((h & 0xf) + 9 * (h >> 6)) << 4) | ((l & 0xf) + 9 * (l >> 6));
    }
    this.pos = p;
  }

  /** Epoch milliseconds as fixed64 nanoseconds (two 32-bit halves: no BigInt). */
  fixed64Ms(field: number, ms: number): void {
    this.tag(field, 1);
    this.ensure(8);
    const ns = Math.round(ms * 1e6);
    const hi = Math.floor(ns / 4294967296);
    this.buf.writeUInt32LE((ns - hi * 4294967296) >>> 0, this.pos);
    this.buf.writeUInt32LE(hi >>> 0, this.pos + 4);
    this.pos += 8;
  }

  fixed32(field: number, v: number): void {
    this.tag(field, 5);
    this.ensure(4);
    this.buf.writeUInt32LE(v >>> 0, this.pos);
    this.pos += 4;
  }

  anyValue(v: AttributeValue | undefined | null): void {
    if (typeof v === 'string') this.string(1, v);
    else if (typeof v === 'boolean') {
      this.tag(2, 0);
      this.varint(v ? 1 : 0);
    } else if (typeof v === 'number') {
      if (Number.isSafeInteger(v)) {
        this.tag(3, 0);
        if (v >= 0) this.varint(v);
        else {
          // int64 two's complement: ten bytes.
          this.ensure(10);
          let x = BigInt.asUintN(64, BigInt(v));
          while (x > 0x7fn) {
            this.buf[this.pos++] = Number(x & 0x7fn) | 0x80;
            x >>= 7n;
          }
          this.buf[this.pos++] = Number(x);
        }
      } else {
        this.tag(4, 1);
        this.ensure(8);
        this.buf.writeDoubleLE(v, this.pos);
        this.pos += 8;
      }
    } else if (Array.isArray(v)) {
      const at = this.open(5);
      for (const item of v) {
        const it = this.open(1);
        this.anyValue(item);
        this.close(it);
      }
      this.close(at);
    }
  }

  attributes(field: number, attrs: Attributes): void {
    for (const key in attrs) {
      const value = attrs[key];
      if (value !== undefined) this.attribute(field, key, value);
    }
  }

  /** One attribute (a `KeyValue` in `field`). */
  attribute(field: number, key: string, value: AttributeValue): void {
    const kv = this.open(field);
    this.string(1, key);
    const av = this.open(2);
    this.anyValue(value);
    this.close(av);
    this.close(kv);
  }

  /** Attributes kept flat: key, value, key, value. */
  flatAttributes(field: number, attrs: readonly (string | AttributeValue)[]): void {
    for (let i = 0; i < attrs.length; i += 2) this.attribute(field, attrs[i] as string, attrs[i + 1] as AttributeValue);
  }

  span(s: LeanSpan): void {
    const at = this.open(2);
    const ctx = s.ctx;
    this.hex(1, ctx.traceId);
    this.hex(2, ctx.spanId);
    const state = ctx.traceState?.serialize();
    if (state) this.string(3, state);
    if (s.parentSpanId !== undefined) this.hex(4, s.parentSpanId);
    this.string(5, s.name);
    this.tag(6, 0);
    this.varint(s.kind + 1);
    this.fixed64Ms(7, s.startMs);
    this.fixed64Ms(8, s.endMs);
    if (s.direct !== undefined) s.direct(this, s.directOf);
    this.flatAttributes(9, s.attrs);
    if (s.events !== undefined) {
      for (const e of s.events) {
        const ev = this.open(11);
        this.fixed64Ms(1, e.timeMs);
        this.string(2, e.name);
        if (e.attributes) this.attributes(3, e.attributes);
        this.close(ev);
      }
    }
    if (s.links !== undefined) for (const l of s.links) {
      const lk = this.open(13);
      this.hex(1, l.context.traceId);
      this.hex(2, l.context.spanId);
      const ls = l.context.traceState?.serialize();
      if (ls) this.string(3, ls);
      if (l.attributes) this.attributes(4, l.attributes);
      this.fixed32(6, (l.context.traceFlags & 0xff) | HAS_IS_REMOTE | (l.context.isRemote ? IS_REMOTE : 0));
      this.close(lk);
    }
    if (s.statusCode !== 0 || s.statusMessage) {
      const st = this.open(15);
      if (s.statusMessage) this.string(2, s.statusMessage);
      this.tag(3, 0);
      this.varint(s.statusCode);
      this.close(st);
    }
    this.fixed32(16, (ctx.traceFlags & 0xff) | HAS_IS_REMOTE | (s.parentRemote ? IS_REMOTE : 0));
    this.close(at);
  }
}

const writer = new Writer();

/**
 * The encoder of the gateway's batches in one call: one resource and one instrumentation scope, fixed at start,
 * around the spans. The bytes are a copy: the writer's buffer is reused by the next export. The batcher encodes
 * span by span instead (`TraceBatchEncoder`); this one-shot form is the reference its bytes are checked against
 * (otlp-encode.test.ts) and what test/bench/tracing-export-micro.ts measures.
 */
export function traceRequestEncoder(resource: Attributes, scope: string, resourceSchemaUrl?: string): (spans: readonly LeanSpan[]) => Buffer {
  return (spans) => {
    const w = writer;
    w.pos = 0;
    if (spans.length === 0) return Buffer.alloc(0);
    const rs = w.open(1);
    const r = w.open(1);
    w.attributes(1, resource);
    w.close(r);
    const ss = w.open(2);
    const sc = w.open(1);
    w.string(1, scope);
    w.close(sc);
    for (const s of spans) w.span(s);
    w.close(ss);
    if (resourceSchemaUrl) w.string(3, resourceSchemaUrl);
    w.close(rs);
    return Buffer.from(w.buf.subarray(0, w.pos));
  };
}

const varintSize = (v: number): number => (v < 0x80 ? 1 : v < 0x4000 ? 2 : v < 0x200000 ? 3 : v < 0x10000000 ? 4 : 5);

function writeVarint(b: Buffer, at: number, v: number): number {
  while (v > 0x7f) {
    b[at++] = (v & 0x7f) | 0x80;
    v >>>= 7;
  }
  b[at++] = v;
  return at;
}

/**
 * Encoding in two steps (ADR 0055): each span to its `Span` message bytes when it ends (`append`, into a batch's
 * writer), and at export the `ResourceSpans`/`ScopeSpans` envelope written around a batch's bytes (`request`).
 * `Span` is a repeated length-delimited field of `ScopeSpans`, so the concatenated span messages are exactly what
 * the one-shot encoder writes between the scope and the end of the `ScopeSpans`: the same bytes. Ended spans then
 * die young instead of waiting up to a second in the batcher and being promoted to the old generation.
 */
export class TraceBatchEncoder {
  /** `resource` (field 1 of ResourceSpans), `scope` (field 1 of ScopeSpans), `schema_url` (field 3 of ResourceSpans). */
  private readonly resource: Buffer;
  private readonly scope: Buffer;
  private readonly schemaUrl: Buffer;

  constructor(resource: Attributes, scope: string, resourceSchemaUrl?: string) {
    const w = new Writer(4096);
    const r = w.open(1);
    w.attributes(1, resource);
    w.close(r);
    this.resource = Buffer.from(w.buf.subarray(0, w.pos));
    w.pos = 0;
    const sc = w.open(1);
    w.string(1, scope);
    w.close(sc);
    this.scope = Buffer.from(w.buf.subarray(0, w.pos));
    w.pos = 0;
    if (resourceSchemaUrl) w.string(3, resourceSchemaUrl);
    this.schemaUrl = Buffer.from(w.buf.subarray(0, w.pos));
  }

  /** Appends the span's `Span` message (field 2 of ScopeSpans) to `w`. */
  append(w: Writer, span: LeanSpan): void {
    w.span(span);
  }

  /** The `ExportTraceServiceRequest` of the spans whose messages are `spans` (not empty), in a new Buffer. */
  request(spans: Uint8Array): Buffer {
    const ssLen = this.scope.length + spans.length;
    const rsLen = this.resource.length + 1 + varintSize(ssLen) + ssLen + this.schemaUrl.length;
    const out = Buffer.allocUnsafe(1 + varintSize(rsLen) + rsLen);
    out[0] = 0x0a; // resource_spans, field 1, length-delimited
    let p = writeVarint(out, 1, rsLen);
    p += this.resource.copy(out, p);
    out[p++] = 0x12; // scope_spans, field 2, length-delimited
    p = writeVarint(out, p, ssLen);
    p += this.scope.copy(out, p);
    out.set(spans, p);
    p += spans.length;
    this.schemaUrl.copy(out, p);
    return out;
  }
}
