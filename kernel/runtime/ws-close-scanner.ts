/**
 * Finds the Close frame in one direction of a relayed WebSocket connection (RFC 6455 §5.2, §5.5.1) without copying
 * or parsing messages: frame headers are read, payloads skipped by length. Only a Close frame's payload (at most 125
 * bytes, a control frame's limit) is kept, to read its status code and reason. Control frames are never compressed
 * (permessage-deflate compresses data frames only), so this works on any connection. Once a Close frame is seen,
 * or the bytes stop looking like WebSocket frames, the scanner stops reading.
 */
export class WsCloseScanner {
  /** The Close frame's status code: 1005 when it carried none; undefined until one is seen. */
  code: number | undefined = undefined;
  /** The Close frame's reason, when it gave one. */
  reason: string | undefined = undefined;
  /** True once a Close frame was seen or the stream is not WebSocket frames: later chunks are ignored. */
  done = false;
  private readonly header = Buffer.alloc(14);
  private headerLength = 0;
  /** Payload bytes of the current frame still to skip (or to collect, for a Close frame). */
  private remaining = 0;
  private close: Buffer | undefined = undefined;
  private closeLength = 0;
  private mask: Buffer | undefined = undefined;

  /** Read one relayed chunk. */
  push(chunk: Buffer): void {
    let i = 0;
    const n = chunk.length;
    while (i < n && !this.done) {
      if (this.remaining > 0) {
        const take = Math.min(this.remaining, n - i);
        if (this.close !== undefined) {
          chunk.copy(this.close, this.closeLength, i, i + take);
          this.closeLength += take;
        }
        this.remaining -= take;
        i += take;
        if (this.remaining === 0 && this.close !== undefined) this.closed();
        continue;
      }
      this.header[this.headerLength++] = chunk[i++]!;
      const needed = this.headerSize();
      if (needed === -1 || this.headerLength < needed) continue;
      this.frame(needed);
    }
  }

  /** Bytes the header in hand needs in all; -1 while its second byte has not arrived. */
  private headerSize(): number {
    if (this.headerLength < 2) return -1;
    const b1 = this.header[1]!;
    const len7 = b1 & 0x7f;
    return 2 + (len7 === 126 ? 2 : len7 === 127 ? 8 : 0) + (b1 & 0x80 ? 4 : 0);
  }

  /** A complete header: note the payload to skip, or start collecting a Close frame's. */
  private frame(size: number): void {
    const h = this.header;
    const opcode = h[0]! & 0x0f;
    const masked = (h[1]! & 0x80) !== 0;
    const len7 = h[1]! & 0x7f;
    let length = len7;
    if (len7 === 126) length = h.readUInt16BE(2);
    else if (len7 === 127) length = h.readUInt32BE(2) * 2 ** 32 + h.readUInt32BE(6);
    this.headerLength = 0;
    if (opcode === 0x8) {
      // A control frame longer than 125 bytes is not WebSocket: stop rather than guess.
      if (length > 125) return void (this.done = true);
      this.mask = masked ? Buffer.from(h.subarray(size - 4, size)) : undefined;
      this.close = Buffer.alloc(length);
      this.closeLength = 0;
      this.remaining = length;
      if (length === 0) this.closed();
      return;
    }
    // Reserved opcodes (3-7, 0xB-0xF) mean these are not WebSocket frames.
    if ((opcode > 2 && opcode < 8) || opcode > 0xa) return void (this.done = true);
    this.remaining = length;
  }

  private closed(): void {
    const payload = this.close!;
    const mask = this.mask;
    if (mask !== undefined) for (let k = 0; k < payload.length; k++) payload[k] = payload[k]! ^ mask[k & 3]!;
    this.code = payload.length >= 2 ? payload.readUInt16BE(0) : 1005;
    if (payload.length > 2) this.reason = payload.toString('utf8', 2);
    this.close = undefined;
    this.done = true;
  }
}
