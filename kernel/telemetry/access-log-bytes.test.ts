// The access log's text line is written into the sink's buffer field by field (issue 15): its bytes must be those of
// the string formatter it replaced, kept below as the reference, on values that need quoting, escaping or UTF-8.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AccessLog, fixed2, loggedPath } from './access-log.ts';
import type { LoggedExchange } from './access-log.ts';
import { formatLine, isoNow, LogSink, ProcessLogger, textValue } from './logger.ts';

/** The text line as it was built before (session 5), by concatenation. */
function reference(ex: LoggedExchange, durationMs: number): string {
  const route = ex.route;
  const routePart = route.bind ? ` bind=${route.bind} listener=${textValue(route.listener)} route=${textValue(route.name)}` : '';
  let line =
    `${isoNow()} INFO  request${routePart} src.addr=${ex.sourceAddress} http.method=${ex.method} ` +
    `http.host=${textValue(ex.clientAuthority)} http.path=${textValue(loggedPath(ex.originalUrl))} http.status=${ex.status} ` +
    `protocol=${ex.protocol} request.id=${ex.requestId}`;
  if (ex.span !== undefined) {
    const sc = ex.span.spanContext();
    line += ` trace_id=${sc.traceId} span_id=${sc.spanId}`;
  }
  if (ex.attempts > 1) line += ` retry.attempt=${ex.attempts - 1}`;
  if (ex.errorMessage !== undefined) line += ` error=${textValue(ex.errorMessage)}`;
  line += ` duration=${fixed2(durationMs)}ms`;
  const extra = ex.fields;
  if (extra) for (const k in extra) line += ` ${k}=${textValue(extra[k])}`;
  return `${line}\n`;
}

const TRICKY = [
  '', 'plain', 'a b', 'say "hi"', 'k=v', 'tab\there', 'new\nline', 'cr\r', '\u0001ctl', '\u007fdel', 'caf\u00e9', '\u65e5\u672c',
  'emoji \u{1F600}', '\u{1F600}', 'nbsp\u00a0x', 'ls\u2028x', 'bom\ufeff', 'lone \ud800 surrogate', '\udc00', 'back\\slash',
  'x'.repeat(70_000), `${'\u00e9'.repeat(30_000)} "q"`, '/p?access_token=abc&x=1', '/p?x=a b&api_key=s3cret#frag', '%22=%20',
];

function exchange(i: number): LoggedExchange {
  const v = (k: number): string => TRICKY[(i + k) % TRICKY.length]!;
  return {
    route: i % 5 === 0 ? { name: '', key: '', listener: '', bind: 0 } : { name: v(1), key: 'k', listener: v(2), bind: 3000 + i },
    sourceAddress: i % 7 === 0 ? v(3) : '127.0.0.1',
    method: i % 6 === 0 ? v(4) : 'POST',
    clientAuthority: v(5),
    originalUrl: v(6).startsWith('/') ? v(6) : `/x/${v(6)}`,
    status: [200, 0, 101, 499, 503, 1234567][i % 6]!,
    protocol: i % 4 === 0 ? v(7) : 'http',
    requestId: i % 3 === 0 ? v(8) : `rid-${i}`,
    span: i % 2 === 0 ? undefined : { spanContext: () => ({ traceId: v(9), spanId: 'b7ad6b7169203331' }) },
    attempts: (i % 4) + 1,
    errorMessage: i % 3 === 1 ? v(10) : undefined,
    fields: i % 3 === 2 ? { 'ai.model': v(11), n: i * 1.5, ok: i % 2 === 0, neg: -i, big: 1e21, nan: Number.NaN, [v(12) || 'e']: v(13) } : undefined,
  } as unknown as LoggedExchange;
}

const DURATIONS = [0, 0.001, 0.005, 0.5, 1.234, 9.995, 99.999, 123.456, 65_000.1, 1e12, 1e13, Number.NaN, -1, Infinity];

for (const mode of ['string', 'bytes'] as const) {
  test(`the text line written into the buffer is byte-identical to the concatenated one (${mode} sink)`, (t) => {
    t.mock.method(Date, 'now', () => 1767225600042);
    const chunks: Buffer[] = [];
    const sink = mode === 'string' ? new LogSink((c) => chunks.push(Buffer.from(c))) : LogSink.toBytes((c) => chunks.push(c));
    const log = new AccessLog(sink, true, 'text');
    const expected: string[] = [];
    for (let i = 0; i < 400; i++) {
      const ex = exchange(i);
      const d = DURATIONS[i % DURATIONS.length]! + (i > 200 ? i / 7 : 0);
      log.record(ex, d);
      expected.push(reference(ex, d));
      if (i % 13 === 0) sink.flush();
    }
    sink.flush();
    assert.equal(Buffer.concat(chunks).toString('latin1'), Buffer.from(expected.join('')).toString('latin1'));
  });
}

test('JSON lines, rules lines and process-logger lines keep their bytes and their order in the buffer', (t) => {
  t.mock.method(Date, 'now', () => 1767225600042);
  const chunks: Buffer[] = [];
  const sink = LogSink.toBytes((c) => chunks.push(c));
  const logger = new ProcessLogger(sink, { level: 'info', format: 'text' });
  const log = new AccessLog(sink, true, 'text');
  const expected: string[] = [];
  for (let i = 0; i < 60; i++) {
    const ex = exchange(i);
    log.format = i % 2 === 0 ? 'json' : 'text';
    log.record(ex, 1.5);
    if (log.format === 'json') {
      const f: Record<string, unknown> = { bind: ex.route.bind || undefined, listener: ex.route.listener || undefined, route: ex.route.name || undefined };
      Object.assign(f, { 'src.addr': ex.sourceAddress, 'http.method': ex.method, 'http.host': ex.clientAuthority, 'http.path': loggedPath(ex.originalUrl) });
      Object.assign(f, { 'http.status': ex.status, protocol: ex.protocol, 'request.id': ex.requestId, 'retry.attempt': ex.attempts > 1 ? ex.attempts - 1 : undefined });
      Object.assign(f, { error: ex.errorMessage, duration_ms: 1.5 });
      if (ex.span) Object.assign(f, { trace_id: ex.span.spanContext().traceId, span_id: 'b7ad6b7169203331' });
      Object.assign(f, ex.fields);
      expected.push(formatLine('json', 'info', 'request', f));
    } else expected.push(reference(ex, 1.5));
    logger.warn(TRICKY[i % TRICKY.length]!, { detail: TRICKY[(i + 1) % TRICKY.length] });
    expected.push(formatLine('text', 'warn', TRICKY[i % TRICKY.length]!, { detail: TRICKY[(i + 1) % TRICKY.length] }));
  }
  sink.flush();
  assert.equal(Buffer.concat(chunks).toString('latin1'), Buffer.from(expected.join('')).toString('latin1'));
});

test('a batch is one write, and each chunk is the stream\'s to keep', async () => {
  const chunks: Buffer[] = [];
  const sink = LogSink.toBytes((c) => chunks.push(c));
  const log = new AccessLog(sink, true, 'text');
  for (let i = 0; i < 5000; i++) log.record(exchange(1), 1);
  await new Promise((r) => setImmediate(r));
  assert.equal(chunks.length, 1);
  assert.equal(chunks[0]!.toString().split('\n').length, 5001);
  log.record(exchange(1), 1);
  await new Promise((r) => setImmediate(r));
  assert.equal(chunks.length, 2);
  assert.notEqual(chunks[0]!.buffer, chunks[1]!.buffer, 'each chunk is the stream\'s to keep');
});

test('no control character of a value reaches a text line raw: values a client chose (an LLM model name) cannot send terminal escapes', () => {
  const chunks: Buffer[] = [];
  const sink = LogSink.toBytes((c) => chunks.push(c));
  const log = new AccessLog(sink, true, 'text');
  const hostile = ['gpt\u001b[31mRED\u001b[0m', 'bell\u0007', 'nul\u0000x', 'del\u007fx', 'csi\u009b2J', 'bs\bx'];
  for (const model of hostile) {
    log.record({ ...exchange(1), fields: { 'llm.model': model } } as LoggedExchange, 1);
    const logger = new ProcessLogger(sink, { level: 'info', format: 'text' });
    logger.info(model, { model });
  }
  sink.flush();
  const text = Buffer.concat(chunks).toString('utf8');
  const lines = text.split('\n').slice(0, -1);
  assert.equal(lines.length, hostile.length * 2);
  for (const line of lines) assert.doesNotMatch(line, /[\u0000-\u001f\u007f-\u009f]/, JSON.stringify(line));
  // Each value is quoted, its control characters escaped as JSON escapes them; JSON.parse gives the value back.
  for (const [i, model] of hostile.entries()) {
    const quoted = / llm\.model=("(?:[^"\\]|\\.)*")/.exec(lines[i * 2]!)?.[1] ?? assert.fail(lines[i * 2]);
    assert.equal(JSON.parse(quoted), model);
    assert.ok(lines[i * 2 + 1]!.endsWith(` model=${quoted}`), lines[i * 2 + 1]);
  }
});
