// The Close frame finder of relayed WebSocket connections (ADR 0055), fed frames split anywhere.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { WsCloseScanner } from './ws-close-scanner.ts';

/** A frame as RFC 6455 §5.2 lays it out (client frames are masked). */
function frame(opcode: number, payload: Buffer, mask: boolean): Buffer {
  const len = payload.length;
  const header = Buffer.alloc(2 + (len > 65535 ? 8 : len > 125 ? 2 : 0) + (mask ? 4 : 0));
  header[0] = 0x80 | opcode;
  header[1] = (mask ? 0x80 : 0) | (len > 65535 ? 127 : len > 125 ? 126 : len);
  if (len > 65535) header.writeBigUInt64BE(BigInt(len), 2);
  else if (len > 125) header.writeUInt16BE(len, 2);
  const body = Buffer.from(payload);
  if (mask) {
    const key = Buffer.from([0x37, 0xfa, 0x21, 0x3d]);
    key.copy(header, header.length - 4);
    for (let i = 0; i < body.length; i++) body[i] = body[i]! ^ key[i & 3]!;
  }
  return Buffer.concat([header, body]);
}

function closePayload(code: number, reason: string): Buffer {
  const b = Buffer.alloc(2 + Buffer.byteLength(reason));
  b.writeUInt16BE(code, 0);
  b.write(reason, 2);
  return b;
}

/** Feed `bytes` in chunks of `size`. */
function scan(bytes: Buffer, size: number): WsCloseScanner {
  const s = new WsCloseScanner();
  for (let i = 0; i < bytes.length; i += size) s.push(bytes.subarray(i, i + size));
  return s;
}

describe('WsCloseScanner', () => {
  const stream = (mask: boolean): Buffer =>
    Buffer.concat([
      frame(1, Buffer.from('hello'), mask),
      frame(2, Buffer.alloc(300, 7), mask), // 16-bit length
      frame(2, Buffer.alloc(70_000, 9), mask), // 64-bit length
      frame(9, Buffer.from('ping'), mask),
      frame(8, closePayload(4001, 'asked to ✓'), mask),
      frame(1, Buffer.from('after close'), mask),
    ]);

  for (const mask of [false, true]) {
    for (const size of [1, 3, 13, 4096, 1 << 20]) {
      it(`finds the code and reason after data frames (${mask ? 'masked' : 'unmasked'}, chunks of ${size})`, () => {
        const s = scan(stream(mask), size);
        assert.equal(s.code, 4001);
        assert.equal(s.reason, 'asked to ✓');
        assert.equal(s.done, true);
      });
    }
  }

  it('a Close frame without a payload is 1005 (no status received)', () => {
    const s = scan(frame(8, Buffer.alloc(0), true), 1);
    assert.equal(s.code, 1005);
    assert.equal(s.reason, undefined);
  });

  it('no Close frame: no code', () => {
    const s = scan(frame(1, Buffer.from('just data'), false), 2);
    assert.equal(s.code, undefined);
    assert.equal(s.done, false);
  });

  it('bytes that are not WebSocket frames stop the scan without a code', () => {
    const s = scan(Buffer.from('GET / HTTP/1.1\r\nHost: x\r\n\r\n'), 5);
    assert.equal(s.code, undefined);
    assert.equal(s.done, true);
  });
});
