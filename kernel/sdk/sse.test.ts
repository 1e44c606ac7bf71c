import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SseOverflowError, SseParser, parseSseEvents } from './sse.ts';
import { formatSseComment, formatSseEvent } from './sse-writer.ts';
import type { SseEvent } from './sse.ts';

function parse(chunks: readonly string[], end = true): { events: SseEvent[]; retries: number[]; parser: SseParser } {
  const events: SseEvent[] = [];
  const retries: number[] = [];
  const parser = new SseParser({ onEvent: (e) => events.push(e), onRetry: (ms) => retries.push(ms) });
  for (const c of chunks) parser.push(c);
  if (end) parser.end();
  return { events, retries, parser };
}

/** Every way of cutting `text` in two, and one chunk per character. */
function splits(text: string): string[][] {
  const out: string[][] = [[text], [...text]];
  for (let i = 1; i < text.length; i++) out.push([text.slice(0, i), text.slice(i)]);
  return out;
}

describe('SseParser', () => {
  it('reads events whatever the chunk boundaries (inside a field name, a value, a line ending)', () => {
    const text = 'event: message\nid: 1\ndata: {"a":1}\n\ndata: {"b":2}\n\n';
    for (const chunks of splits(text)) {
      const { events, parser } = parse(chunks);
      assert.deepEqual(
        events,
        [
          { event: 'message', data: '{"a":1}', id: '1' },
          { event: undefined, data: '{"b":2}', id: '1' },
        ],
        JSON.stringify(chunks),
      );
      assert.equal(parser.lastEventId, '1');
    }
  });

  it('joins multi-line data with LF, and removes one leading space only', () => {
    const { events } = parse(['data: first\ndata:second\ndata:  third\ndata\n\n']);
    assert.deepEqual(events, [{ event: undefined, data: 'first\nsecond\n third\n', id: undefined }]);
  });

  it('accepts CRLF and CR line endings, also when a CRLF is cut between chunks', () => {
    const crlf = 'id: 7\r\nevent: note\r\ndata: a\r\ndata: b\r\n\r\n';
    for (const chunks of splits(crlf)) {
      assert.deepEqual(parse(chunks).events, [{ event: 'note', data: 'a\nb', id: '7' }], JSON.stringify(chunks));
    }
    const cr = 'data: x\rdata: y\r\rdata: z\r\r';
    for (const chunks of splits(cr)) {
      assert.deepEqual(
        parse(chunks).events.map((e) => e.data),
        ['x\ny', 'z'],
        JSON.stringify(chunks),
      );
    }
  });

  it('ignores comments and unknown fields', () => {
    const { events } = parse([': stream open\n\n:keep-alive\nfoo: bar\ndata: kept\n: inside\n\n']);
    assert.deepEqual(events, [{ event: undefined, data: 'kept', id: undefined }]);
  });

  it('keeps the last event id across events; an event without data dispatches nothing but its id counts', () => {
    const { events, parser } = parse(['id: p1\ndata: \n\n', 'id: p2\n\n', 'data: after\n\n', 'id\ndata: reset\n\n']);
    assert.deepEqual(events, [
      { event: undefined, data: '', id: 'p1' },
      { event: undefined, data: 'after', id: 'p2' },
      { event: undefined, data: 'reset', id: '' },
    ]);
    assert.equal(parser.lastEventId, '');
    assert.equal(parse(['id: a\0b\ndata: x\n\n']).parser.lastEventId, undefined, 'an id with NUL is ignored');
  });

  it('reports retry when it is digits only', () => {
    const { retries } = parse(['retry: 1500\n', 'retry: 2s\nretry: -1\nretry:\nretry: 30\n\n']);
    assert.deepEqual(retries, [1500, 30]);
  });

  it('resets the event type after each event and strips a leading BOM', () => {
    const { events } = parse(['\uFEFFevent: custom\ndata: 1\n\ndata: 2\n\n']);
    assert.deepEqual(
      events.map((e) => [e.event, e.data]),
      [
        ['custom', '1'],
        [undefined, '2'],
      ],
    );
  });

  it('at the end of the stream, a last line without its line ending still completes its event', () => {
    assert.deepEqual(parse(['data: last']).events, [{ event: undefined, data: 'last', id: undefined }]);
    assert.deepEqual(parse(['data: none'], false).events, [], 'nothing before the end');
  });

  it('throws on an event larger than its bound (an unfinished line or data lines), and lets the buffer go', () => {
    const parser = new SseParser({ onEvent: () => undefined, maxEventSize: 64 });
    parser.push('data: short\n\n');
    assert.throws(() => parser.push(`data: ${'x'.repeat(100)}`), (err) => err instanceof SseOverflowError && /longer than 64 bytes/.test(err.message));
    const many = new SseParser({ onEvent: () => undefined, maxEventSize: 64 });
    assert.throws(() => {
      for (let i = 0; i < 20; i++) many.push('data: 0123456789\n');
    }, SseOverflowError);
  });

  it('counts UTF-8 bytes, not characters, in data lines and in an unfinished line, whatever the chunks (ADR 0160)', () => {
    // 40 characters, 80 bytes: within a bound of 64 characters, past one of 64 bytes.
    const wide = '\u00e9'.repeat(40);
    for (const chunks of [[`data: ${wide}\n\n`], [`data: ${wide}`], [Buffer.from(`data: ${wide}\n\n`)], [...Buffer.from(`data: ${wide}`)].map((b) => Buffer.from([b]))]) {
      const parser = new SseParser({ onEvent: () => undefined, maxEventSize: 64 });
      assert.throws(() => {
        for (const c of chunks) parser.push(c);
      }, SseOverflowError);
    }
    const lines = new SseParser({ onEvent: () => undefined, maxEventSize: 64 });
    assert.throws(() => {
      for (let i = 0; i < 4; i++) lines.push(`data: ${'\u00e9'.repeat(10)}\n`);
    }, SseOverflowError, '4 lines of 20 bytes and their joins');
    const events: string[] = [];
    const fits = new SseParser({ onEvent: (e) => events.push(e.data), maxEventSize: 64 });
    fits.push(`data: ${'\u00e9'.repeat(32)}\n\n`);
    assert.deepEqual(events, ['\u00e9'.repeat(32)], 'exactly 64 bytes fit');
  });

  it('with onOverflow skip, drops the oversized event and reads the next one, across any chunking', () => {
    const text = `data: a\n\ndata: ${'x'.repeat(200)}\ndata: more\n\ndata: b\n\ndata: 1\n${'data: 0123456789\n'.repeat(10)}\ndata: c\n\n`;
    for (const chunks of [[text], text.match(/[^]{1,7}/g)!, text.match(/[^]{1,50}/g)!]) {
      const events: string[] = [];
      const parser = new SseParser({ onEvent: (e) => events.push(e.data), maxEventSize: 64, onOverflow: 'skip' });
      for (const c of chunks) parser.push(c);
      parser.end();
      assert.deepEqual(events, ['a', 'b', 'c'], JSON.stringify(chunks.length));
    }
  });

  it('never holds more than its bound, even for a stream that never ends a line', () => {
    const parser = new SseParser({ onEvent: () => undefined, maxEventSize: 1024, onOverflow: 'skip' });
    for (let i = 0; i < 1000; i++) parser.push('y'.repeat(100));
    parser.push('\ndata: ok\n\n');
    const events: string[] = [];
    const p2 = new SseParser({ onEvent: (e) => events.push(e.data), maxEventSize: 1024, onOverflow: 'skip' });
    for (let i = 0; i < 1000; i++) p2.push('y'.repeat(100));
    p2.push('\n\ndata: ok\n\n');
    p2.end();
    assert.deepEqual(events, ['ok'], 'the end of the dropped line is not a blank line; the blank line after it ends the event');
  });

  it('an upstream event sent a byte at a time costs linear time: one long line, many lines, CRLF, UTF-8 (ADR 0153)', () => {
    const bodies: Record<string, (n: number) => Buffer> = {
      line: (n) => Buffer.from(`data: ${'x'.repeat(n - 10)}\n\n`),
      lines: (n) => Buffer.from(`${'data: xx\n'.repeat(Math.floor(n / 9))}\n`),
      crlf: (n) => Buffer.from(`data: ${'x'.repeat(n - 10)}\r\n\r\n`),
      utf8: (n) => Buffer.from(`data: ${'\u00e9'.repeat((n - 10) / 2)}\n\n`),
    };
    /** CPU ms to parse `body` fed a byte at a time; the one event's data length is checked. */
    const cost = (body: Buffer, length: number): number => {
      let got = -1;
      const parser = new SseParser({ onEvent: (e) => (got = e.data.length), maxEventSize: 2 * 1024 * 1024 });
      const start = process.cpuUsage();
      for (let i = 0; i < body.length; i++) parser.push(body.subarray(i, i + 1));
      parser.end();
      const used = process.cpuUsage(start);
      assert.equal(got, length);
      return (used.user + used.system) / 1000;
    };
    for (const [name, make] of Object.entries(bodies)) {
      const length = (n: number): number => (name === 'lines' ? Math.floor(n / 9) * 3 - 1 : name === 'utf8' ? (n - 10) / 2 : n - 10);
      const small = cost(make(256 * 1024), length(256 * 1024));
      const large = cost(make(1024 * 1024), length(1024 * 1024));
      // Four times the bytes: about four times the time (quadratic would be sixteen).
      assert.ok(large < Math.max(10 * small, 200), `${name}: ${small.toFixed(0)} ms for 256 KiB, ${large.toFixed(0)} ms for 1 MiB`);
    }
  });

  it('decodes bytes, also when a chunk ends inside a UTF-8 sequence', () => {
    const bytes = Buffer.from('data: é€😀\n\n');
    for (let cut = 1; cut < bytes.length; cut++) {
      const events: string[] = [];
      const parser = new SseParser({ onEvent: (e) => events.push(e.data) });
      parser.push(bytes.subarray(0, cut));
      parser.push(bytes.subarray(cut));
      parser.end();
      assert.deepEqual(events, ['é€😀'], `cut at ${cut}`);
    }
  });

  it('parses a whole body at once', () => {
    assert.deepEqual(parseSseEvents(Buffer.from('event: a\ndata: 1\n\ndata: 2')), [
      { event: 'a', data: '1', id: undefined },
      { event: undefined, data: '2', id: undefined },
    ]);
  });
});

describe('formatSseEvent', () => {
  it('writes fields and one data line per line, and round-trips through the parser', () => {
    assert.equal(formatSseEvent({ data: '{"a":1}' }), 'data: {"a":1}\n\n');
    assert.equal(formatSseEvent({ event: 'message', id: '5', data: 'x' }), 'event: message\nid: 5\ndata: x\n\n');
    assert.equal(formatSseEvent({ data: 'a\nb\r\nc', retry: 10 }), 'retry: 10\ndata: a\ndata: b\ndata: c\n\n');
    assert.equal(formatSseComment('keep-alive'), ': keep-alive\n\n');
    const text = formatSseEvent({ event: 'e', id: '1', data: 'multi\nline' }) + formatSseComment('x\ny') + formatSseEvent({ data: '' });
    assert.deepEqual(parseSseEvents(text), [
      { event: 'e', data: 'multi\nline', id: '1' },
      { event: undefined, data: '', id: '1' },
    ]);
  });
});
