// The parts of tracing's per-request CPU that ADRs 0049 and 0055 replaced, measured alone and interleaved in one
// process (noise shared): making a request's two spans (the SDK's tracer, with its ids and with pooled ids, against
// the kernel's LeanTracer) and encoding them to OTLP protobuf (the SDK's serializer on SDK spans against
// otlp-encode.ts on lean spans). Spans look like the gateway's: a SERVER span with the request's attributes and a
// CLIENT child per upstream attempt.
// Usage: node test/bench/tracing-export-micro.ts [rounds=9]
import { SpanKind, context, trace } from '@opentelemetry/api';
import { AlwaysOnSampler, BasicTracerProvider as TracerProvider } from '@opentelemetry/sdk-trace-base';
import type { ReadableSpan, SpanExporter, SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import { resourceFromAttributes, defaultResource } from '@opentelemetry/resources';
import { traceRequestEncoder } from '../../kernel/telemetry/otlp-encode.ts';
import { LeanTracer } from '../../kernel/telemetry/lean-span.ts';
import type { LeanSpan } from '../../kernel/telemetry/lean-span.ts';
import { PooledIdGenerator } from '../../kernel/telemetry/tracing-sdk.ts';

const ROUNDS = Number(process.argv[2] ?? 9);
const BATCH = 512;
let sink: ReadableSpan[] = [];
const keep: SpanProcessor = { onStart() {}, onEnd: (s) => void sink.push(s), forceFlush: async () => {}, shutdown: async () => {} };
const provider = (ids?: PooledIdGenerator) =>
  new TracerProvider({ resource: defaultResource().merge(resourceFromAttributes({ 'service.name': 'bench' })), sampler: new AlwaysOnSampler(), idGenerator: ids, spanProcessors: [keep] }).getTracer('switchyard');
const sdkIds = provider();
const pooled = provider(new PooledIdGenerator());
let leanSink: LeanSpan[] = [];
const lean = new LeanTracer({ onEnd: (s) => void leanSink.push(s) }, new PooledIdGenerator(), 1, 1);
const resource = defaultResource().merge(resourceFromAttributes({ 'service.name': 'bench' }));
const encodeLean = traceRequestEncoder(resource.attributes, 'switchyard');

function request(tracer: Pick<ReturnType<typeof provider>, 'startSpan'>, i: number): void {
  const server = tracer.startSpan('GET', { kind: SpanKind.SERVER });
  const ctx = trace.setSpan(context.active(), server);
  const client = tracer.startSpan('GET', { kind: SpanKind.CLIENT }, ctx);
  client.setAttributes({ 'http.request.method': 'GET', 'server.address': '127.0.0.1', 'server.port': 8081, 'url.full': `http://127.0.0.1:8081/plain/${i}` });
  client.setAttribute('http.response.status_code', 200);
  client.end();
  server.updateName('GET /plain/*');
  server.setAttributes({
    'http.request.method': 'GET', 'url.path': `/plain/${i}`, 'url.scheme': 'http', 'server.address': '127.0.0.1:8080', 'client.address': '127.0.0.1',
    'client.port': 40000 + (i % 20000), 'network.protocol.version': '1.1', 'http.response.status_code': 200, 'request.id': `req-${i}`,
    'user_agent.original': 'bench', 'http.route': '/plain/*', route: 'plain', listener: 'default', bind: 8080,
  });
  server.end();
}

const cpu = (fn: () => void): number => {
  const t = process.cpuUsage();
  fn();
  const d = process.cpuUsage(t);
  return d.user + d.system;
};
const median = (a: number[]) => [...a].sort((x, y) => x - y)[a.length >> 1]!;

const spansOf = (tracer: ReturnType<typeof provider>): ReadableSpan[] => {
  sink = [];
  for (let i = 0; i < BATCH / 2; i++) request(tracer, i);
  return sink;
};
const leanSpans = (): LeanSpan[] => {
  leanSink = [];
  for (let i = 0; i < BATCH / 2; i++) request(lean, i);
  return leanSink;
};
const batch = spansOf(sdkIds);
const leanBatch = leanSpans();
const rows = { 'make 2 spans, SDK ids': [] as number[], 'make 2 spans, pooled ids': [] as number[], 'make 2 spans, LeanTracer': [] as number[], 'encode, SDK serializer': [] as number[], 'encode, otlp-encode.ts (lean spans)': [] as number[] };
const N = 40; // batches per measurement
for (let r = 0; r < ROUNDS + 1; r++) {
  const got = {
    'make 2 spans, SDK ids': cpu(() => { for (let k = 0; k < N; k++) spansOf(sdkIds); }),
    'make 2 spans, pooled ids': cpu(() => { for (let k = 0; k < N; k++) spansOf(pooled); }),
    'make 2 spans, LeanTracer': cpu(() => { for (let k = 0; k < N; k++) leanSpans(); }),
    'encode, SDK serializer': cpu(() => { for (let k = 0; k < N; k++) ProtobufTraceSerializer.serializeRequest(batch); }),
    'encode, otlp-encode.ts (lean spans)': cpu(() => { for (let k = 0; k < N; k++) encodeLean(leanBatch); }),
  };
  if (r === 0) continue; // warm-up
  for (const k of Object.keys(got) as (keyof typeof got)[]) rows[k].push(got[k] / (N * (BATCH / 2)));
}
console.log(`# ${ROUNDS} rounds × ${N} batches of ${BATCH} spans (${BATCH / 2} requests), Node ${process.version}, load ${(await import('node:os')).loadavg().map((x) => x.toFixed(1)).join(' ')}`);
console.log('| per request (2 spans) | µs CPU, median (range) |\n|---|---:|');
for (const [k, v] of Object.entries(rows)) console.log(`| ${k} | ${median(v).toFixed(1)} (${Math.min(...v).toFixed(1)}–${Math.max(...v).toFixed(1)}) |`);
const a = ProtobufTraceSerializer.serializeRequest(batch)!.length, b = encodeLean(leanBatch).length;
console.log(`batch bytes: SDK ${a}, otlp-encode (lean) ${b}`);
