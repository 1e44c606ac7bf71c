// WebSocket frames written by hand (RFC 6455 section 5), for tests that split, fragment or send them where a client
// library would not.

/** A server frame (unmasked) with the given FIN/opcode bits (and RSV1, a compressed message's). */
export function wsFrame(fin: boolean, opcode: number, payload: Buffer, rsv1 = false): Buffer {
  const n = payload.length;
  const b0 = (fin ? 0x80 : 0) | (rsv1 ? 0x40 : 0) | opcode;
  let head: Buffer;
  if (n < 126) head = Buffer.from([b0, n]);
  else if (n < 65536) head = Buffer.from([b0, 126, n >> 8, n & 0xff]);
  else {
    head = Buffer.alloc(10);
    head[0] = b0;
    head[1] = 127;
    head.writeBigUInt64BE(BigInt(n), 2);
  }
  return Buffer.concat([head, payload]);
}

/** A client frame: masked with `key` (RFC 6455 section 5.3); payload under 64 KiB. */
export function wsMaskedFrame(fin: boolean, opcode: number, payload: Buffer, key = Buffer.from([0x37, 0xfa, 0x21, 0x3d])): Buffer {
  const body = Buffer.from(payload.map((b, i) => b ^ key[i & 3]!));
  const n = payload.length;
  const head = n < 126 ? Buffer.from([(fin ? 0x80 : 0) | opcode, 0x80 | n]) : Buffer.from([(fin ? 0x80 : 0) | opcode, 0x80 | 126, n >> 8, n & 0xff]);
  return Buffer.concat([head, key, body]);
}
