import { crc32 } from 'node:zlib';

/** One decoded AWS event-stream message: its string headers and raw payload. */
export interface EventStreamMessage {
  headers: Record<string, string>;
  payload: Buffer;
}

const PRELUDE = 12;
const MAX_MESSAGE = 16 * 1024 * 1024;
const EMPTY = Buffer.alloc(0);

/**
 * An incremental decoder of the AWS event-stream framing (`application/vnd.amazon.eventstream`, used by Bedrock's
 * streaming APIs): `total length, headers length, prelude CRC, headers, payload, message CRC`. Checks both CRCs.
 * Non-string header values are skipped (Bedrock sends only strings).
 */
export class EventStreamDecoder {
  /**
   * The head of a message begun in earlier chunks: `partial[0..size)`, grown by doubling up to the message's declared
   * length, so each byte is copied a bounded number of times (re-joining everything pending on every chunk made one
   * 16 MiB message in 4 KiB chunks copy about 32 GiB). A fresh buffer per message: payloads handed out are views of it.
   */
  private partial: Buffer = EMPTY;
  private size = 0;
  /** The declared length of the message in `partial`, once its prelude is whole and checked (0: not yet). */
  private total = 0;
  /** The framing error thrown, thrown again by every later feed (the bad bytes are never skipped). */
  private broken: Error | undefined;

  feed(chunk: Buffer): EventStreamMessage[] {
    if (this.broken) throw this.broken;
    try {
      return this.decode(chunk);
    } catch (err) {
      this.broken = err as Error;
      throw err;
    }
  }

  /** True when bytes of an unfinished message are left over. */
  get pending(): boolean {
    return this.size > 0;
  }

  private decode(chunk: Buffer): EventStreamMessage[] {
    const out: EventStreamMessage[] = [];
    let at = 0;
    // First the message begun earlier: only the bytes it still lacks are copied.
    while (this.size > 0 && at < chunk.length) {
      const want = this.total || PRELUDE;
      const take = Math.min(want - this.size, chunk.length - at);
      this.reserve(this.size + take, want);
      chunk.copy(this.partial, this.size, at, at + take);
      this.size += take;
      at += take;
      if (this.size < want) return out;
      if (this.total === 0) {
        this.total = checkPrelude(this.partial, 0);
        continue;
      }
      out.push(decodeFrame(this.partial.subarray(0, this.total)));
      this.partial = EMPTY;
      this.size = 0;
      this.total = 0;
    }
    // Then whole messages straight from the chunk, without a copy.
    let total = 0;
    while (chunk.length - at >= PRELUDE) {
      total = checkPrelude(chunk, at);
      if (chunk.length - at < total) break;
      out.push(decodeFrame(chunk.subarray(at, at + total)));
      at += total;
      total = 0;
    }
    if (at < chunk.length) {
      // The start of a message: kept in a buffer of its own.
      this.total = total;
      this.reserve(chunk.length - at, total || PRELUDE);
      chunk.copy(this.partial, 0, at);
      this.size = chunk.length - at;
    }
    return out;
  }

  /** Room for `n` bytes in `partial`, doubling, never past `limit` (the declared length being gathered). */
  private reserve(n: number, limit: number): void {
    if (this.partial.length >= n) return;
    const grown = Buffer.allocUnsafe(Math.min(limit, Math.max(n, 2 * this.partial.length, 4096)));
    this.partial.copy(grown, 0, 0, this.size);
    this.partial = grown;
  }
}

/** The declared length of the message whose prelude is at `at`, after checking it and the prelude CRC. */
function checkPrelude(buf: Buffer, at: number): number {
  const total = buf.readUInt32BE(at);
  const headersLength = buf.readUInt32BE(at + 4);
  if (total < PRELUDE + 4 + headersLength || total > MAX_MESSAGE) throw new Error(`invalid event-stream message length ${total}`);
  if ((crc32(buf.subarray(at, at + 8)) >>> 0) !== buf.readUInt32BE(at + 8)) throw new Error('event-stream prelude checksum mismatch');
  return total;
}

/** One whole message (its prelude checked): the message CRC checked, headers and payload taken out. */
function decodeFrame(frame: Buffer): EventStreamMessage {
  const total = frame.length;
  if ((crc32(frame.subarray(0, total - 4)) >>> 0) !== frame.readUInt32BE(total - 4)) throw new Error('event-stream message checksum mismatch');
  const headersEnd = PRELUDE + frame.readUInt32BE(4);
  return { headers: decodeHeaders(frame.subarray(PRELUDE, headersEnd)), payload: frame.subarray(headersEnd, total - 4) };
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
