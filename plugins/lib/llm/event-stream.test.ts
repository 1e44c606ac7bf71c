// The AWS event-stream decoder (Bedrock's streams) reads what an upstream sends in linear time: a message arriving in
// many small chunks is gathered once, not re-joined on every chunk; its caps and checksums are unchanged
// (docs/security.md "Bounded reads of what a peer sends").
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { encodeEventStreamMessage, EventStreamDecoder } from './event-stream.ts';
import type { EventStreamMessage } from './event-stream.ts';

const MAX = 16 * 1024 * 1024;
const HEADERS = { ':event-type': 'chunk', ':message-type': 'event' };

/** A message whose encoded length is exactly `total` bytes. */
function messageOf(total: number, fill: (payload: Buffer) => void): Buffer {
  const overhead = encodeEventStreamMessage(HEADERS, Buffer.alloc(0)).length;
  const payload = Buffer.alloc(total - overhead);
  fill(payload);
  const m = encodeEventStreamMessage(HEADERS, payload);
  assert.equal(m.length, total);
  return m;
}

function feedInChunks(d: EventStreamDecoder, bytes: Buffer, size: number): EventStreamMessage[] {
  const out: EventStreamMessage[] = [];
  for (let i = 0; i < bytes.length; i += size) out.push(...d.feed(bytes.subarray(i, i + size)));
  return out;
}

describe('EventStreamDecoder in many chunks', () => {
  it('a 16 MiB message in 4 KiB chunks, then a small one: decoded whole, in linear time', () => {
    // Before, every chunk re-joined all that was pending: about 32 GiB copied, measured 20+ s of CPU here.
    const big = messageOf(MAX, (p) => {
      for (let i = 0; i + 4 <= p.length; i += 4) p.writeUInt32BE(i >>> 2, i);
    });
    const small = encodeEventStreamMessage({ ':event-type': 'messageStop', ':message-type': 'event' }, Buffer.from('{"stopReason":"end_turn"}'));
    const stream = Buffer.concat([big, small]);
    const d = new EventStreamDecoder();
    const before = process.cpuUsage();
    const out = feedInChunks(d, stream, 4096);
    const used = process.cpuUsage(before);
    const ms = (used.user + used.system) / 1000;
    assert.equal(out.length, 2);
    assert.deepEqual(out[0]!.headers, HEADERS);
    const overhead = MAX - out[0]!.payload.length;
    assert.ok(out[0]!.payload.equals(big.subarray(overhead - 4, MAX - 4)), 'the large payload is byte for byte what was sent');
    assert.equal(out[1]!.headers[':event-type'], 'messageStop');
    assert.equal(out[1]!.payload.toString(), '{"stopReason":"end_turn"}');
    assert.equal(d.pending, false);
    assert.ok(ms < 2000, `decoding took ${ms.toFixed(0)} ms of CPU (linear: well under 200 ms)`);
  });

  it('many messages split at every chunk size decode the same, payloads staying intact after later chunks', () => {
    const messages = Array.from({ length: 40 }, (_, i) =>
      encodeEventStreamMessage({ ':event-type': `e${i}`, ':message-type': 'event' }, Buffer.alloc(i * 97, String.fromCharCode(97 + (i % 26)))),
    );
    const all = Buffer.concat(messages);
    for (const size of [1, 3, 11, 12, 13, 16, 100, 4096, all.length]) {
      const d = new EventStreamDecoder();
      // Fed from a buffer that is overwritten after each feed, as a socket's pooled chunks may be.
      const out: EventStreamMessage[] = [];
      const scratch = Buffer.alloc(size);
      for (let i = 0; i < all.length; i += size) {
        const n = all.copy(scratch, 0, i, i + size);
        out.push(...d.feed(Buffer.from(scratch.subarray(0, n))));
      }
      assert.equal(out.length, messages.length, `chunks of ${size}`);
      out.forEach((m, i) => {
        assert.equal(m.headers[':event-type'], `e${i}`, `chunks of ${size}`);
        assert.ok(m.payload.equals(Buffer.alloc(i * 97, String.fromCharCode(97 + (i % 26)))), `payload ${i}, chunks of ${size}`);
      });
      assert.equal(d.pending, false);
    }
  });

  it('pending is true while a message is unfinished', () => {
    const m = encodeEventStreamMessage(HEADERS, Buffer.from('{}'));
    const d = new EventStreamDecoder();
    assert.deepEqual(d.feed(m.subarray(0, 5)), []);
    assert.equal(d.pending, true);
    assert.deepEqual(d.feed(m.subarray(5, 20)), []);
    assert.equal(d.pending, true);
    assert.equal(d.feed(m.subarray(20)).length, 1);
    assert.equal(d.pending, false);
  });

  it('a message declared larger than 16 MiB fails as soon as its prelude is here', () => {
    const prelude = Buffer.from(messageOf(4096, () => undefined).subarray(0, 12));
    prelude.writeUInt32BE(MAX + 1, 0);
    const d = new EventStreamDecoder();
    assert.deepEqual(d.feed(prelude.subarray(0, 7)), []);
    assert.throws(() => d.feed(prelude.subarray(7)), /invalid event-stream message length 16777217/);
    assert.throws(() => d.feed(Buffer.alloc(1)), /invalid event-stream message length/, 'and on every later chunk');
  });

  it('a bad prelude checksum and a bad message checksum still fail in chunked delivery', () => {
    const m = messageOf(64 * 1024, (p) => p.fill(1));
    const badPrelude = Buffer.from(m);
    badPrelude[9]! ^= 0xff;
    assert.throws(() => feedInChunks(new EventStreamDecoder(), badPrelude, 5), /prelude checksum mismatch/);
    const badBody = Buffer.from(m);
    badBody[40_000]! ^= 0xff;
    const d = new EventStreamDecoder();
    assert.throws(() => feedInChunks(d, badBody, 4096), /message checksum mismatch/);
    assert.throws(() => d.feed(Buffer.alloc(1)), /message checksum mismatch/, 'and on every later chunk');
  });
});
