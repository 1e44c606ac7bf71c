import { crc32 } from 'node:zlib';

/** One decoded AWS event-stream message: its string headers and raw payload. */
export interface EventStreamMessage {
  headers: Record<string, string>;
  payload: Buffer;
}

const PRELUDE = 12;
const MAX_MESSAGE = 16 * 1024 * 1024;

/**
 * An incremental decoder of the AWS event-stream framing (`application/vnd.amazon.eventstream`, used by Bedrock's
 * streaming APIs): `total length, headers length, prelude CRC, headers, payload, message CRC`. Checks both CRCs.
 * Non-string header values are skipped (Bedrock sends only strings).
 */
export class EventStreamDecoder {
  private buffer: Buffer = Buffer.alloc(0);

  feed(chunk: Buffer): EventStreamMessage[] {
    this.buffer = this.buffer.length === 0 ? chunk : Buffer.concat([this.buffer, chunk]);
    const out: EventStreamMessage[] = [];
    let offset = 0;
    while (this.buffer.length - offset >= PRELUDE) {
      const total = this.buffer.readUInt32BE(offset);
      const headersLength = this.buffer.readUInt32BE(offset + 4);
      if (total < PRELUDE + 4 + headersLength || total > MAX_MESSAGE) throw new Error(`invalid event-stream message length ${total}`);
      if ((crc32(this.buffer.subarray(offset, offset + 8)) >>> 0) !== this.buffer.readUInt32BE(offset + 8)) {
        throw new Error('event-stream prelude checksum mismatch');
      }
      if (this.buffer.length - offset < total) break;
      const frame = this.buffer.subarray(offset, offset + total);
      if ((crc32(frame.subarray(0, total - 4)) >>> 0) !== frame.readUInt32BE(total - 4)) throw new Error('event-stream message checksum mismatch');
      out.push({ headers: decodeHeaders(frame.subarray(PRELUDE, PRELUDE + headersLength)), payload: frame.subarray(PRELUDE + headersLength, total - 4) });
      offset += total;
    }
    this.buffer = offset === 0 ? this.buffer : this.buffer.subarray(offset);
    return out;
  }

  /** True when bytes of an unfinished message are left over. */
  get pending(): boolean {
    return this.buffer.length > 0;
  }
}

/** Sizes of the fixed-width header value types (0, 1: booleans; 2 byte; 3 short; 4 int; 5 long; 8 timestamp; 9 uuid). */
const FIXED: Record<number, number> = { 0: 0, 1: 0, 2: 1, 3: 2, 4: 4, 5: 8, 8: 8, 9: 16 };

function decodeHeaders(buf: Buffer): Record<string, string> {
  const headers: Record<string, string> = {};
  let i = 0;
  while (i < buf.length) {
    const nameLength = buf.readUInt8(i);
    const name = buf.toString('utf8', i + 1, i + 1 + nameLength);
    i += 1 + nameLength;
    const type = buf.readUInt8(i);
    i += 1;
    if (type === 6 || type === 7) {
      const length = buf.readUInt16BE(i);
      if (type === 7) headers[name] = buf.toString('utf8', i + 2, i + 2 + length);
      i += 2 + length;
    } else if (FIXED[type] !== undefined) {
      i += FIXED[type]!;
    } else {
      throw new Error(`unknown event-stream header type ${type}`);
    }
  }
  return headers;
}

/** Encode one message (tests, and any stand-in that must speak the format). */
export function encodeEventStreamMessage(headers: Record<string, string>, payload: Buffer): Buffer {
  const parts: Buffer[] = [];
  for (const [name, value] of Object.entries(headers)) {
    const n = Buffer.from(name, 'utf8');
    const v = Buffer.from(value, 'utf8');
    const h = Buffer.alloc(1 + n.length + 3 + v.length);
    h.writeUInt8(n.length, 0);
    n.copy(h, 1);
    h.writeUInt8(7, 1 + n.length);
    h.writeUInt16BE(v.length, 2 + n.length);
    v.copy(h, 4 + n.length);
    parts.push(h);
  }
  const headerBytes = Buffer.concat(parts);
  const total = PRELUDE + headerBytes.length + payload.length + 4;
  const frame = Buffer.alloc(total);
  frame.writeUInt32BE(total, 0);
  frame.writeUInt32BE(headerBytes.length, 4);
  frame.writeUInt32BE(crc32(frame.subarray(0, 8)) >>> 0, 8);
  headerBytes.copy(frame, PRELUDE);
  payload.copy(frame, PRELUDE + headerBytes.length);
  frame.writeUInt32BE(crc32(frame.subarray(0, total - 4)) >>> 0, total - 4);
  return frame;
}
