// The batcher encodes each span when it ends and writes the OTLP envelope around a batch's bytes at export (ADR 0055):
// its requests must be byte for byte what the one-shot encoder (traceRequestEncoder) writes for the same spans, on
// spans with every kind of value; and the batching limits are the SDK's BatchSpanProcessor's.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { context, SpanKind, SpanStatusCode, trace, TraceFlags } from '@opentelemetry/api';
import type { Span } from '@opentelemetry/api';
import { TraceState } from '@opentelemetry/core';
import { LeanSpan, LeanTracer } from './lean-span.ts';
import type { SpanSink } from './lean-span.ts';
import { TraceBatchEncoder, traceRequestEncoder, Writer } from './otlp-encode.ts';
import { SpanBatcher } from './span-batcher.ts';
import type { ExportOutcome, LeanSpanExporter } from './span-batcher.ts';
import { PooledIdGenerator } from './tracing-sdk.ts';

const RESOURCE = { 'service.name': 'switchyard-test', 'service.version': '1.0.0', 'host.name': 'hôte-ünïcode', pid: 4242, 'process.runtime.versions': ['24', '1'] };
const SCHEMA = 'https://opentelemetry.io/schemas/1.28.0';

/** An exporter that keeps each request body; `hold` leaves exports unanswered until `release`. */
class Capture implements LeanSpanExporter {
  bodies: Buffer[] = [];
  pending: ((r: ExportOutcome) => void)[] = [];
  private readonly hold: boolean;
  constructor(hold = false) {
    this.hold = hold;
  }
  export(body: Buffer, done: (r: ExportOutcome) => void): void {
    this.bodies.push(body);
    if (this.hold) this.pending.push(done);
    else setImmediate(() => done({ code: 0 }));
  }
  release(): void {
    for (const d of this.pending.splice(0)) d({ code: 0 });
  }
  async shutdown(): Promise<void> {}
}

/** Every span ended goes to the batcher and to `ended`, in order. */
function tracer(batcher: SpanBatcher, ended: LeanSpan[]): LeanTracer {
  const sink: SpanSink = { onEnd: (s) => (ended.push(s), batcher.onEnd(s)) };
  return new LeanTracer(sink, new PooledIdGenerator(), 1, 1);
}

const long = (n: number, unit: string): string => unit.repeat(Math.ceil(n / unit.length)).slice(0, n);

/** A request's spans, varied by `i`: every attribute type, events, links, status, remote and local parents, trace state. */
function spans(t: LeanTracer, i: number): void {
  const remote = trace.setSpanContext(context.active(), {
    traceId: (i + 1).toString(16).padStart(32, 'a'),
    spanId: (i + 7).toString(16).padStart(16, 'b'),
    traceFlags: TraceFlags.SAMPLED,
    isRemote: true,
    traceState: i % 3 === 0 ? new TraceState(`vendor=v${i},other=x`) : undefined,
  });
  const server = t.startSpan(i % 5 === 0 ? `GET /ünï/${i} ✓` : 'GET', { kind: SpanKind.SERVER, attributes: { 'http.request.method': 'GET' } }, i % 2 === 0 ? remote : undefined);
  server.setAttributes({
    'url.path': `/plain/${i}`,
    'client.port': 40000 + i,
    'negative.int': -i - 1,
    'big.int': Number.MAX_SAFE_INTEGER - i,
    'double.value': i + 0.25,
    'nan.value': Number.NaN,
    'bool.true': true,
    'bool.false': i % 2 === 0,
    'string.unicode': `日本語 ${i} ünïcødé 🚀`,
    'string.long': long(200 + (i % 40) * 37, 'abcdefghij'),
    'string.longer': i % 50 === 0 ? long(20_000 + i, 'é日x') : 'short',
    'array.strings': ['a', `b${i}`, 'ç'],
    'array.numbers': [1, -2, 3.5, i],
    'array.bools': [true, false],
    'array.empty': [],
    'empty.string': '',
  });
  const child = t.startSpan(`attempt ${i}`, { kind: SpanKind.CLIENT, links: i % 4 === 0 ? [{ context: { traceId: 'c'.repeat(32), spanId: 'd'.repeat(16), traceFlags: 1, isRemote: i % 8 === 0, traceState: new TraceState('k=v') }, attributes: { 'link.i': i, 'link.s': 'ł' } }] : undefined }, trace.setSpan(context.active(), server));
  child.addEvent('retry', { 'attempt.n': i, reason: 'ünavailable' });
  if (i % 3 === 0) child.addEvent('plain event');
  if (i % 7 === 0) child.recordException(new Error(`boom ${i} – ✗`));
  child.setStatus(i % 6 === 0 ? { code: SpanStatusCode.ERROR, message: `failed ${i} ✗` } : i % 6 === 1 ? { code: SpanStatusCode.OK } : { code: SpanStatusCode.UNSET });
  child.end();
  const internal: Span = t.startSpan('internal', { kind: SpanKind.INTERNAL, startTime: Date.now() - 5 }, trace.setSpan(context.active(), child));
  internal.end(Date.now() + 0.123456);
  if (i % 9 === 0) server.setStatus({ code: SpanStatusCode.ERROR });
  server.setAttribute('http.response.status_code', 200 + (i % 300));
  server.end();
}

/** Each body must be the one-shot encoder's bytes for the next spans ended, in order: returns how many each held. */
function matchBatches(bodies: Buffer[], ended: LeanSpan[], reference: (s: LeanSpan[]) => Buffer): number[] {
  const counts: number[] = [];
  let at = 0;
  for (const [n, body] of bodies.entries()) {
    let k = 1;
    while (at + k <= ended.length && reference(ended.slice(at, at + k)).length < body.length) k++;
    const expected = reference(ended.slice(at, at + k));
    assert.ok(body.equals(expected), `batch ${n}: ${body.length} bytes, the one-shot encoder ${expected.length} for ${k} spans`);
    counts.push(k);
    at += k;
  }
  assert.equal(at, ended.length, 'every span ended was exported');
  return counts;
}

test('the batcher\'s requests are the one-shot encoder\'s bytes for the same spans', async () => {
  const capture = new Capture();
  const batcher = new SpanBatcher(capture, new TraceBatchEncoder(RESOURCE, 'switchyard', SCHEMA), (e) => assert.fail(e));
  const ended: LeanSpan[] = [];
  const t = tracer(batcher, ended);
  for (let i = 0; i < 700; i++) spans(t, i); // 2,100 spans: four full batches and a partial one
  await batcher.flush();
  assert.equal(ended.length, 2100);
  const counts = matchBatches(capture.bodies, ended, traceRequestEncoder(RESOURCE, 'switchyard', SCHEMA));
  assert.deepEqual(counts, [512, 512, 512, 512, 52]);
  // Without a schema URL and with a resource of one attribute, a single small span.
  const small = new Capture();
  const b2 = new SpanBatcher(small, new TraceBatchEncoder({ 'service.name': 's' }, 'sc'), (e) => assert.fail(e));
  const one: LeanSpan[] = [];
  tracer(b2, one).startSpan('x').end();
  await b2.shutdown();
  assert.ok(small.bodies[0]!.equals(traceRequestEncoder({ 'service.name': 's' }, 'sc')(one)));
});

test('a batch of 512 leaves at once, fewer after a second; one export at a time; 8,192 wait, then spans are dropped', async () => {
  const capture = new Capture(true);
  const batcher = new SpanBatcher(capture, new TraceBatchEncoder(RESOURCE, 'switchyard'), (e) => assert.fail(e));
  const t = tracer(batcher, []);
  for (let i = 0; i < 511; i++) t.startSpan('s').end();
  assert.equal(capture.bodies.length, 0, '511 spans wait for the timer');
  t.startSpan('s').end();
  assert.equal(capture.bodies.length, 1, 'the 512th span sends the batch');
  for (let i = 0; i < 9000; i++) t.startSpan('s').end();
  assert.equal(capture.bodies.length, 1, 'one export at a time');
  assert.equal(batcher.dropped, 9000 - 8192, 'beyond 8,192 waiting spans, new ones are dropped and counted');
  capture.release();
  await new Promise((r) => setImmediate(r));
  assert.equal(capture.bodies.length, 2, 'the next full batch leaves when the export answers');
  const flushed = batcher.flush();
  for (let k = 0; k < 20; k++) {
    capture.release();
    await new Promise((r) => setImmediate(r));
  }
  await flushed;
  assert.equal(capture.bodies.length, 1 + 8192 / 512, 'flush sends everything that waited');

  const timed = new Capture();
  const b2 = new SpanBatcher(timed, new TraceBatchEncoder(RESOURCE, 'switchyard'), (e) => assert.fail(e));
  const t2 = tracer(b2, []);
  const started = Date.now();
  for (let i = 0; i < 10; i++) t2.startSpan('s').end();
  while (timed.bodies.length === 0) await new Promise((r) => setTimeout(r, 20));
  const waited = Date.now() - started;
  assert.ok(waited >= 950 && waited < 3000, `a partial batch leaves about a second after its first span (${waited} ms)`);
  t2.startSpan('late').end();
  await b2.shutdown();
  assert.equal(timed.bodies.length, 2, 'shutdown exports what is left');
});

test('a batch also closes at 2 MiB of encoded spans', async () => {
  const capture = new Capture();
  const batcher = new SpanBatcher(capture, new TraceBatchEncoder(RESOURCE, 'switchyard'), (e) => assert.fail(e));
  const ended: LeanSpan[] = [];
  const t = tracer(batcher, ended);
  for (let i = 0; i < 100; i++) t.startSpan('big', { attributes: { 'gen_ai.prompt': long(60_000, `prompt ${i} ✓ `) } }).end();
  await batcher.flush();
  const counts = matchBatches(capture.bodies, ended, traceRequestEncoder(RESOURCE, 'switchyard'));
  assert.ok(counts.length >= 3 && counts.every((c) => c < 512), `batches of ${counts.join(', ')} spans`);
  for (const b of capture.bodies) assert.ok(b.length < 2 * 1024 * 1024 + 70_000, `${b.length} bytes`);
});

test('a value the encoder cannot write drops that span, not the request', async () => {
  const capture = new Capture();
  const errors: Error[] = [];
  const batcher = new SpanBatcher(capture, new TraceBatchEncoder(RESOURCE, 'switchyard'), (e) => errors.push(e));
  const ended: LeanSpan[] = [];
  const t = tracer(batcher, ended);
  t.startSpan('good').end();
  const bad = t.startSpan('bad') as LeanSpan;
  bad.append('bad.value', { toString: () => 1 } as unknown as string);
  (bad.ctx as { traceId: string }).traceId = undefined as unknown as string;
  assert.doesNotThrow(() => bad.end());
  t.startSpan('good again').end();
  await batcher.flush();
  assert.equal(batcher.dropped, 1);
  assert.equal(errors.length, 1);
  assert.ok(capture.bodies[0]!.equals(traceRequestEncoder(RESOURCE, 'switchyard')([ended[0]!, ended[2]!])));
});

test('ids are written as the bytes their hex names (the branch-free hex loop), lower and upper case', () => {
  const ids = new PooledIdGenerator();
  const samples = ['0123456789abcdef', 'ffffffffffffffff', '0000000000000001', 'ABCDEF0123456789', 'aBcDeF9876543210'];
  for (let i = 0; i < 200; i++) samples.push(ids.generateTraceId(), ids.generateSpanId());
  for (const id of samples) {
    const w = new Writer(64);
    w.hex(1, id);
    // tag (field 1, length-delimited), length, bytes
    assert.deepEqual([...w.buf.subarray(0, w.pos)], [0x0a, id.length / 2, ...Buffer.from(id, 'hex')], id);
  }
});

test('spans dropped on a full queue and failed exports are counted, by error type (otel.sdk.* metrics)', async () => {
  const held = new Capture(true);
  const counts: Record<string, number> = {};
  const count = (kind: string) => (n: number, errorType: string) => void (counts[`${kind}:${errorType}`] = (counts[`${kind}:${errorType}`] ?? 0) + n);
  const batcher = new SpanBatcher(held, new TraceBatchEncoder(RESOURCE, 'switchyard'), () => undefined, { processed: count('processed'), exported: count('exported') });
  const t = tracer(batcher, []);
  // The first full batch goes to the (silent) exporter; 8192 more wait; the rest are dropped.
  for (let i = 0; i < 512 + 8192 + 300; i++) t.startSpan('s').end();
  assert.equal(held.bodies.length, 1);
  assert.equal(batcher.queuedSpans, 8192);
  assert.deepEqual({ ...counts }, { 'processed:': 512, 'processed:queue_full': 300 });
  // The collector fails that export: its spans count as exported with the failure's type.
  held.pending.shift()!({ code: 1, error: new Error('unavailable'), errorType: 'UNAVAILABLE' });
  assert.equal(counts['exported:UNAVAILABLE'], 512);
  assert.equal(counts['processed:'], 1024, 'the next batch left at once');
  held.release();
  assert.equal(counts['exported:'], 512);
});

test('a partial success: the spans the collector rejected count as `rejected`, the others as exported, and it is reported', async () => {
  const counted: [number, string][] = [];
  const errors: string[] = [];
  const exporter: LeanSpanExporter = {
    export: (_body, done) => setImmediate(() => done({ code: 0, rejected: 2, rejectedReason: 'too old' })),
    shutdown: async () => undefined,
  };
  const batcher = new SpanBatcher(exporter, new TraceBatchEncoder(RESOURCE, 'switchyard', SCHEMA), (e) => errors.push(e.message), { processed: () => undefined, exported: (n, t) => counted.push([n, t]) });
  const t = tracer(batcher, []);
  for (let i = 0; i < 5; i++) t.startSpan(`s${i}`).end();
  await batcher.flush();
  assert.deepEqual(counted, [
    [3, ''],
    [2, 'rejected'],
  ]);
  assert.deepEqual(errors, ['the collector rejected 2 of 5 spans: too old']);
});
