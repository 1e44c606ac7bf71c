/**
 * OTLP trace protobuf (`ExportTraceServiceRequest`) written by hand in one pass into a buffer reused from export to
 * export (ADR 0049). The SDK's serializer walks every span twice (a size estimate, then the write), encodes strings
 * through TextEncoder and ids through a JS hex loop; this writes strings and ids with Buffer's native `write`.
 * Field numbers: opentelemetry-proto trace/v1/trace.proto and common/v1/common.proto. The tests against a real
 * Jaeger (test/e2e/tracing-*.test.ts) read back what it writes.
 */
import type { Attributes, AttributeValue, HrTime } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace';

const HAS_IS_REMOTE = 0x100;
const IS_REMOTE = 0x200;

class Writer {
  buf = Buffer.allocUnsafe(64 * 1024);
  pos = 0;

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
    const at = this.open(field);
    this.ensure(s.length * 3);
    this.pos += this.buf.write(s, this.pos, 'utf8');
    this.close(at);
  }

  /** A hex id (trace or span id) as bytes. */
  hex(field: number, id: string): void {
    this.tag(field, 2);
    const n = id.length >>> 1;
    this.varint(n);
    this.ensure(n);
    this.pos += this.buf.write(id, this.pos, 'hex');
  }

  fixed64Time(field: number, t: HrTime): void {
    this.tag(field, 1);
    this.ensure(8);
    this.buf.writeBigUInt64LE(BigInt(t[0]) * 1_000_000_000n + BigInt(t[1]), this.pos);
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
      if (value === undefined) continue;
      const kv = this.open(field);
      this.string(1, key);
      const av = this.open(2);
      this.anyValue(value);
      this.close(av);
      this.close(kv);
    }
  }

  span(s: ReadableSpan): void {
    const at = this.open(2);
    const ctx = s.spanContext();
    this.hex(1, ctx.traceId);
    this.hex(2, ctx.spanId);
    const state = ctx.traceState?.serialize();
    if (state) this.string(3, state);
    const parent = s.parentSpanContext;
    if (parent?.spanId) this.hex(4, parent.spanId);
    this.string(5, s.name);
    this.tag(6, 0);
    this.varint(s.kind + 1);
    this.fixed64Time(7, s.startTime);
    this.fixed64Time(8, s.endTime);
    this.attributes(9, s.attributes);
    if (s.droppedAttributesCount) {
      this.tag(10, 0);
      this.varint(s.droppedAttributesCount);
    }
    for (const e of s.events) {
      const ev = this.open(11);
      this.fixed64Time(1, e.time);
      this.string(2, e.name);
      if (e.attributes) this.attributes(3, e.attributes);
      if (e.droppedAttributesCount) {
        this.tag(4, 0);
        this.varint(e.droppedAttributesCount);
      }
      this.close(ev);
    }
    if (s.droppedEventsCount) {
      this.tag(12, 0);
      this.varint(s.droppedEventsCount);
    }
    for (const l of s.links) {
      const lk = this.open(13);
      this.hex(1, l.context.traceId);
      this.hex(2, l.context.spanId);
      const ls = l.context.traceState?.serialize();
      if (ls) this.string(3, ls);
      if (l.attributes) this.attributes(4, l.attributes);
      this.fixed32(6, (l.context.traceFlags & 0xff) | HAS_IS_REMOTE | (l.context.isRemote ? IS_REMOTE : 0));
      this.close(lk);
    }
    if (s.droppedLinksCount) {
      this.tag(14, 0);
      this.varint(s.droppedLinksCount);
    }
    if (s.status.code !== 0 || s.status.message) {
      const st = this.open(15);
      if (s.status.message) this.string(2, s.status.message);
      this.tag(3, 0);
      this.varint(s.status.code);
      this.close(st);
    }
    this.fixed32(16, (ctx.traceFlags & 0xff) | HAS_IS_REMOTE | (parent?.isRemote ? IS_REMOTE : 0));
    this.close(at);
  }
}

const writer = new Writer();

/**
 * The request for `spans`, grouped by resource and instrumentation scope (the gateway has one of each). The bytes
 * are a copy: the writer's buffer is reused by the next export.
 */
export function encodeTraceRequest(spans: readonly ReadableSpan[]): Buffer {
  const w = writer;
  w.pos = 0;
  const done = new Set<ReadableSpan>();
  for (const first of spans) {
    if (done.has(first)) continue;
    const resource = first.resource;
    const rs = w.open(1);
    const r = w.open(1);
    w.attributes(1, resource.attributes);
    w.close(r);
    const scopes = new Set<ReadableSpan['instrumentationScope']>();
    for (const s of spans) if (s.resource === resource) scopes.add(s.instrumentationScope);
    for (const scope of scopes) {
      const ss = w.open(2);
      const sc = w.open(1);
      w.string(1, scope.name);
      if (scope.version) w.string(2, scope.version);
      w.close(sc);
      for (const s of spans) {
        if (s.resource !== resource || s.instrumentationScope !== scope) continue;
        w.span(s);
        done.add(s);
      }
      if (scope.schemaUrl) w.string(3, scope.schemaUrl);
      w.close(ss);
    }
    if (resource.schemaUrl) w.string(3, resource.schemaUrl);
    w.close(rs);
  }
  return Buffer.from(w.buf.subarray(0, w.pos));
}
