import assert from 'node:assert/strict';
import { it } from 'node:test';
import { SseTail } from './sse-tail.ts';

/** A tail that summarises an event as its text, and counts the summaries it made. */
function tailOf(): SseTail<string> & { made: number } {
  const tail = new SseTail<string>((data) => {
    tail.made++;
    return data;
  }) as SseTail<string> & { made: number };
  tail.made = 0;
  return tail;
}

function feed(text: string, cuts: number[]): SseTail<string> & { made: number } {
  const tail = tailOf();
  const bytes = Buffer.from(text);
  let at = 0;
  for (const cut of [...cuts, bytes.length]) {
    tail.push(bytes.subarray(at, cut));
    at = cut;
  }
  tail.end();
  return tail;
}

it('keeps the last event and the last event with a state, across any chunking and line endings', () => {
  const text = 'event: x\ndata: {"state":"W"}\n\n: comment\r\ndata: {"a":\r\ndata: 1}\r\n\r\nid: 3\ndata:{"b":2}\n\n';
  for (const cuts of [[], [1, 5, 17, 30, 31, 44, 45, 60], Array.from({ length: text.length }, (_, i) => i)]) {
    const tail = feed(text, cuts);
    assert.equal(tail.last(), '{"b":2}', `cuts ${cuts.join(',')}`);
    assert.equal(tail.lastWithState(), '{"state":"W"}');
  }
  assert.equal(feed('data: {"a":1}\n\ndata: {"a":2}\n', []).last(), '{"a":2}', 'an unterminated last event counts at the end');
  assert.equal(feed('data: é\n\n', [7]).last(), 'é', 'a character split across chunks');
  assert.equal(feed('datax: 1\n\n', []).last(), undefined);
});

it('summarises small events only when asked, once, and a large event at once, keeping only its summary', () => {
  const tail = feed('data: {"state":"W"}\n\ndata: {"b":2}\n\n', []);
  assert.equal(tail.made, 0, 'small events are kept as text until the stream ends');
  tail.last();
  tail.last();
  assert.equal(tail.made, 1);

  const big = `{"state":"${'x'.repeat(100 * 1024)}"}`;
  const large = tailOf();
  large.push(Buffer.from(`data: ${big}\n\n`));
  assert.equal(large.made, 1, 'an event over 64 KiB is summarised as it arrives, its text not kept for the end');
  assert.equal(large.last(), big);
  assert.equal(large.lastWithState(), big);
  assert.equal(large.made, 1);
});
