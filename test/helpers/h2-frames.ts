// HTTP/2 frames written by hand, for peers that must send what node:http2 will not (RFC 9113 4.1).

/** A frame: its 9-byte header (length, type, flags, stream id), then the payload. */
export function h2Frame(type: number, flags: number, stream: number, payload: Buffer = Buffer.alloc(0)): Buffer {
  const head = Buffer.alloc(9);
  head.writeUIntBE(payload.length, 0, 3);
  head[3] = type;
  head[4] = flags;
  head.writeUInt32BE(stream, 5);
  return Buffer.concat([head, payload]);
}
