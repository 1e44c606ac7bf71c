import assert from 'node:assert/strict';
import http2 from 'node:http2';
import { PassThrough } from 'node:stream';
import type { Duplex } from 'node:stream';
import { describe, it } from 'node:test';
import { MAX_ANSWER_HEADER_PAIRS, boundH2Answers } from './h2-answer-bounds.ts';

describe('boundH2Answers (ADR 0158)', () => {
  it("changes only connect calls that hand over their socket (undici's), never a count the caller set", () => {
    const calls: unknown[][] = [];
    http2.connect = ((...args: unknown[]) => void calls.push(args)) as unknown as typeof http2.connect;
    boundH2Answers();
    const createConnection = (): Duplex => new PassThrough();
    const listener = (): undefined => undefined;
    http2.connect('http://a', { createConnection });
    http2.connect('http://a', { createConnection, maxHeaderListPairs: 7 });
    http2.connect('http://a', { settings: {} });
    http2.connect('http://a', listener);
    http2.connect('http://a');
    assert.deepEqual(calls, [
      ['http://a', { createConnection, maxHeaderListPairs: MAX_ANSWER_HEADER_PAIRS }],
      ['http://a', { createConnection, maxHeaderListPairs: 7 }],
      ['http://a', { settings: {} }],
      ['http://a', listener],
      ['http://a'],
    ]);
  });
});
