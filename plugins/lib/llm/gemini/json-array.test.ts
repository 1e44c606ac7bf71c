// Google's JSON-array stream from the provider's events (ADR 0153): each element written as its event arrives (split
// anywhere, even a byte at a time), the array closed at the end; a held event stream converted whole; an error
// answer and a JSON one left as they are.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { PassThrough, Readable } from 'node:stream';
import { test } from 'node:test';
import type { Reply } from 'switchyard/sdk';
import { asJsonArray, asksForSse } from './json-array.ts';

const EVENTS = [{ candidates: [{ content: { parts: [{ text: 'Hel' }] } }] }, { candidates: [{ content: { parts: [{ text: 'lo' }] } }], usageMetadata: { totalTokenCount: 3 } }];
const sse = (o: unknown): string => `data: ${JSON.stringify(o)}\r\n\r\n`;
const streamed = (body: Reply['body']): Reply => ({ status: 200, headers: { 'content-type': 'text/event-stream', 'content-length': '99' }, body, local: false });

async function text(body: Reply['body']): Promise<string> {
  let out = '';
  for await (const c of body as Readable) out += (c as Buffer).toString();
  return out;
}

test('asksForSse: alt=sse only', () => {
  assert.equal(asksForSse('alt=sse'), true);
  assert.equal(asksForSse('key=k&alt=sse'), true);
  assert.equal(asksForSse(''), false);
  assert.equal(asksForSse('alt=json'), false);
});

test('a stream: each element as its event comes, then the closing bracket; headers say JSON', async () => {
  const source = new PassThrough();
  const reply = asJsonArray(streamed(source));
  assert.equal(reply.headers['content-type'], 'application/json; charset=UTF-8');
  assert.equal(reply.headers['content-length'], undefined);
  const out = reply.body as Readable;
  source.write(sse(EVENTS[0]));
  const [first] = (await once(out, 'data')) as [Buffer];
  assert.equal(first.toString(), `[${JSON.stringify(EVENTS[0])}`, 'the first element is sent before the stream ends');
  for (const b of Buffer.from(sse(EVENTS[1]))) source.write(Buffer.from([b]));
  source.end();
  const rest = await text(out);
  assert.deepEqual(JSON.parse(first.toString() + rest), EVENTS);
});

test('an empty stream is an empty array; a held one (bytes) converted whole', async () => {
  assert.equal(await text(asJsonArray(streamed(Readable.from([]))).body), '[]');
  assert.deepEqual(JSON.parse(asJsonArray(streamed(EVENTS.map(sse).join(''))).body as string), EVENTS);
  assert.equal(asJsonArray(streamed(Buffer.alloc(0))).body, '[]');
});

test('an error, or an answer that is no event stream, is left as it is', () => {
  const error: Reply = { status: 429, headers: { 'content-type': 'text/event-stream' }, body: 'x', local: false };
  assert.equal(asJsonArray(error).body, 'x');
  const json: Reply = { status: 200, headers: { 'content-type': 'application/json' }, body: '{"a":1}', local: false };
  assert.equal(asJsonArray(json).body, '{"a":1}');
});
