import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SseParser } from './sse-parser.ts';
import type { SseEvent } from './sse-parser.ts';

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
          { type: 'message', data: '{"a":1}', id: '1' },
          { type: 'message', data: '{"b":2}', id: '1' },
        ],
        JSON.stringify(chunks),
      );
      assert.equal(parser.lastEventId, '1');
    }
  });

  it('joins multi-line data with LF, and removes one leading space only', () => {
    const { events } = parse(['data: first\ndata:second\ndata:  third\ndata\n\n']);
    assert.deepEqual(events, [{ type: 'message', data: 'first\nsecond\n third\n', id: undefined }]);
  });

  it('accepts CRLF and CR line endings, also when a CRLF is cut between chunks', () => {
    const crlf = 'id: 7\r\nevent: note\r\ndata: a\r\ndata: b\r\n\r\n';
    for (const chunks of splits(crlf)) {
      assert.deepEqual(parse(chunks).events, [{ type: 'note', data: 'a\nb', id: '7' }], JSON.stringify(chunks));
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
    assert.deepEqual(events, [{ type: 'message', data: 'kept', id: undefined }]);
  });

  it('keeps the last event id across events; an event without data dispatches nothing but its id counts', () => {
    const { events, parser } = parse(['id: p1\ndata: \n\n', 'id: p2\n\n', 'data: after\n\n', 'id\ndata: reset\n\n']);
    assert.deepEqual(events, [
      { type: 'message', data: '', id: 'p1' },
      { type: 'message', data: 'after', id: 'p2' },
      { type: 'message', data: 'reset', id: '' },
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
      events.map((e) => [e.type, e.data]),
      [
        ['custom', '1'],
        ['message', '2'],
      ],
    );
  });

  it('at the end of the stream, a last line without its line ending still completes its event', () => {
    assert.deepEqual(parse(['data: last']).events, [{ type: 'message', data: 'last', id: undefined }]);
    assert.deepEqual(parse(['data: none'], false).events, [], 'nothing before the end');
  });

  it('refuses an event larger than its buffer limit', () => {
    const parser = new SseParser({ onEvent: () => undefined, maxBuffer: 64 });
    parser.push('data: short\n\n');
    assert.throws(() => parser.push(`data: ${'x'.repeat(100)}`), /exceeded 64 characters/);
  });
});
