/**
 * Server-sent events (the WHATWG event-stream format): the one bounded incremental parser, for every plugin that
 * reads `text/event-stream` (ADR 0030). Writing is sse-writer.ts.
 */
import { bodyBytes } from './streams.ts';

/** One dispatched event. */
export interface SseEvent {
  /** The `event:` field as written; undefined when absent (an EventSource then calls it `message`). */
  readonly event: string | undefined;
  /** The `data:` lines, joined with LF. */
  readonly data: string;
  /** The last event id at dispatch (this event's own `id:`, or an earlier one: ids carry over, as in EventSource). */
  readonly id: string | undefined;
}

/** An event (or an unfinished line) was longer than `SseParserOptions.maxEventSize`. */
export class SseOverflowError extends RangeError {
  readonly limit: number;
  constructor(limit: number) {
    super(`a server-sent event is longer than ${limit} bytes`);
    this.name = 'SseOverflowError';
    this.limit = limit;
  }
}

export interface SseParserOptions {
  readonly onEvent: (event: SseEvent) => void;
  /** A `retry:` field (digits only): the reconnection delay the server asks for, in ms. */
  readonly onRetry?: (ms: number) => void;
  /**
   * Most bytes (UTF-8) one event may hold: its `data` so far plus the unfinished line being read. This is all the
   * parser ever buffers. Default 1 MiB. Bytes, as a body or a stdio line is bounded (ADR 0143, 0160): characters
   * would let three times as much non-ASCII text through.
   */
  readonly maxEventSize?: number;
  /**
   * What happens when an event passes `maxEventSize`: `throw` (the default) makes `push` throw an
   * {@link SseOverflowError} (the caller usually destroys the stream); `skip` drops that event (up to the next blank
   * line) and goes on with the next one. Either way what was buffered is let go at once.
   */
  readonly onOverflow?: 'throw' | 'skip';
}

const LF = 10;
const CR = 13;
const SPACE = 32;
const COLON = 58;
const DEFAULT_MAX_EVENT = 1024 * 1024;

/** How many bytes at the start of `buf` are whole UTF-8 sequences (a chunk may end inside one). */
export function completeUtf8(buf: Uint8Array): number {
  const n = buf.length;
  // Look back over at most 3 continuation bytes for the lead byte of the last sequence.
  for (let i = n - 1; i >= 0 && i >= n - 4; i--) {
    const b = buf[i]!;
    if ((b & 0xc0) === 0x80) continue;
    const size = b < 0x80 ? 1 : b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
    return i + size <= n ? n : i;
  }
  return n;
}

/**
 * An incremental event-stream parser, fed a body chunk by chunk (bytes or decoded text). Lines end with CRLF, LF
 * or CR, and a chunk may end anywhere: inside a UTF-8 sequence, or between the CR and the LF of one line ending.
 * `data:` lines accumulate, `event:` names the event, `id:` sets the last event id (one containing NUL is ignored),
 * `retry:` reports the reconnection delay, `:` lines are comments, a blank line dispatches the event. An event
 * without `data:` lines is not dispatched (its `id:` still counts). A leading byte-order mark is dropped.
 * Memory is bounded by `maxEventSize` (see `onOverflow`).
 */
export class SseParser {
  /** The last event id seen, kept across events. */
  lastEventId: string | undefined;
  private readonly onEvent: (event: SseEvent) => void;
  private readonly onRetry: ((ms: number) => void) | undefined;
  private readonly max: number;
  private readonly throwOnOverflow: boolean;
  /**
   * The unfinished line of the previous chunks, in parts, and its length. Its UTF-8 length is counted only once the
   * event could pass the bound (a UTF-16 unit is at most 3 bytes), then kept up to date; -1 until then.
   */
  private pending: string[] = [];
  private pendingLength = 0;
  private pendingBytes = -1;
  /** Bytes of an unfinished UTF-8 sequence at the end of the previous byte chunk. */
  private partial: Buffer | undefined;
  /** The previous chunk ended with CR: a LF starting the next one belongs to that line ending. */
  private skipLf = false;
  private first = true;
  private data = '';
  /** UTF-8 length of `data`, counted as `pendingBytes` is; -1 until then. */
  private dataBytes = -1;
  private dataLines = 0;
  private type: string | undefined;
  /** Dropping an oversized event until the blank line that ends it. */
  private skipping = false;
  /** The line being read was dropped (too long): its end is not a blank line. */
  private inDroppedLine = false;

  constructor(options: SseParserOptions) {
    this.onEvent = options.onEvent;
    this.onRetry = options.onRetry;
    this.max = options.maxEventSize ?? DEFAULT_MAX_EVENT;
    this.throwOnOverflow = options.onOverflow !== 'skip';
  }

  /** Feed the next chunk. Throws an {@link SseOverflowError} on an oversized event when `onOverflow` is `throw`. */
  push(chunk: Uint8Array | string): void {
    let text: string;
    if (typeof chunk === 'string') text = chunk;
    else {
      let buf = bodyBytes(chunk);
      if (this.partial) {
        buf = Buffer.concat([this.partial, buf]);
        this.partial = undefined;
      }
      const end = completeUtf8(buf);
      if (end < buf.length) this.partial = buf.subarray(end);
      text = buf.toString('utf8', 0, end);
    }
    if (text.length === 0) return;
    if (this.first) {
      this.first = false;
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    }
    let lineStart = 0;
    if (this.skipLf) {
      this.skipLf = false;
      if (text.charCodeAt(0) === LF) lineStart = 1;
    }
    const length = text.length;
    // Only the new text is searched for line ends: an unfinished line is kept in parts and joined once it ends,
    // so a large event arriving in many chunks costs linear time. Most streams use LF only: indexOf finds line
    // ends, and CR is looked for only when the chunk has one.
    const hasCr = text.indexOf('\r', lineStart) !== -1;
    while (lineStart < length) {
      let end: number;
      if (hasCr) {
        const lf = text.indexOf('\n', lineStart);
        const cr = text.indexOf('\r', lineStart);
        end = cr === -1 ? lf : lf === -1 ? cr : Math.min(cr, lf);
      } else end = text.indexOf('\n', lineStart);
      if (end === -1) break;
      if (this.pendingLength > 0) {
        this.pending.push(text.slice(lineStart, end));
        const line = this.pending.join('');
        this.pending = [];
        this.pendingLength = 0;
        this.pendingBytes = -1;
        this.line(line, 0, line.length);
      } else this.line(text, lineStart, end);
      lineStart = end + 1;
      if (hasCr && text.charCodeAt(end) === CR) {
        if (lineStart === length) this.skipLf = true;
        else if (text.charCodeAt(lineStart) === LF) lineStart++;
      }
    }
    if (lineStart < length) {
      const rest = lineStart === 0 ? text : text.slice(lineStart);
      this.pending.push(rest);
      this.pendingLength += rest.length;
      if (this.pendingBytes >= 0) this.pendingBytes += Buffer.byteLength(rest, 'utf8');
      if ((this.pendingLength + this.data.length) * 3 > this.max && this.pendingSize() + this.dataSize() > this.max) this.overflow(true);
    }
  }

  /** The stream ended: a last line without its line ending is still read, and an event it completes dispatched. */
  end(): void {
    if (this.partial) {
      const rest = this.partial.toString('utf8');
      this.pending.push(rest);
      this.pendingLength += rest.length;
      this.partial = undefined;
    }
    if (this.pendingLength > 0) {
      const text = this.pending.join('');
      this.pending = [];
      this.pendingLength = 0;
      this.pendingBytes = -1;
      this.line(text, 0, text.length);
    }
    this.dispatch();
  }

  /** `inLine`: the overflow is in the unfinished line, whose end is still to come. */
  private overflow(inLine: boolean): void {
    this.pending = [];
    this.pendingLength = 0;
    this.pendingBytes = -1;
    this.inDroppedLine = inLine;
    this.data = '';
    this.dataBytes = -1;
    this.dataLines = 0;
    this.type = undefined;
    this.skipping = true;
    if (this.throwOnOverflow) throw new SseOverflowError(this.max);
  }

  private line(text: string, start: number, end: number): void {
    if (this.inDroppedLine) {
      this.inDroppedLine = false; // the end of a line already dropped
      return;
    }
    if (start === end) return this.dispatch();
    if (this.skipping) return;
    const c = text.charCodeAt(start);
    if (c === COLON) return; // a comment
    // The common field, recognised without slicing the line first.
    if (c === 100 /* d */ && text.startsWith('data:', start)) {
      this.addData(text.slice(text.charCodeAt(start + 5) === SPACE ? start + 6 : start + 5, end));
      return;
    }
    const colon = text.indexOf(':', start);
    let field: string;
    let value: string;
    if (colon === -1 || colon >= end) {
      field = text.slice(start, end);
      value = '';
    } else {
      field = text.slice(start, colon);
      value = text.slice(text.charCodeAt(colon + 1) === SPACE ? colon + 2 : colon + 1, end);
    }
    switch (field) {
      case 'data':
        this.addData(value);
        return;
      case 'event':
        this.type = value;
        return;
      case 'id':
        if (!value.includes('\0')) this.lastEventId = value;
        return;
      case 'retry':
        if (value.length > 0 && isDigits(value)) this.onRetry?.(Number(value));
        return;
      default:
        return; // unknown fields are ignored
    }
  }

  private addData(value: string): void {
    if (this.dataBytes >= 0) this.dataBytes += (this.dataLines === 0 ? 0 : 1) + Buffer.byteLength(value, 'utf8');
    this.data = this.dataLines === 0 ? value : `${this.data}\n${value}`;
    this.dataLines++;
    if (this.data.length * 3 > this.max && this.dataSize() > this.max) this.overflow(false);
  }

  /** UTF-8 length of the unfinished line, counted once and then kept up to date (linear over a long line). */
  private pendingSize(): number {
    if (this.pendingBytes < 0) this.pendingBytes = this.pending.reduce((n, part) => n + Buffer.byteLength(part, 'utf8'), 0);
    return this.pendingBytes;
  }

  private dataSize(): number {
    if (this.dataBytes < 0) this.dataBytes = Buffer.byteLength(this.data, 'utf8');
    return this.dataBytes;
  }

  private dispatch(): void {
    if (this.skipping) {
      this.skipping = false;
      return;
    }
    if (this.dataLines === 0) {
      this.type = undefined;
      return;
    }
    const event: SseEvent = { event: this.type, data: this.data, id: this.lastEventId };
    this.data = '';
    this.dataBytes = -1;
    this.dataLines = 0;
    this.type = undefined;
    this.onEvent(event);
  }
}

function isDigits(value: string): boolean {
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c < 48 || c > 57) return false;
  }
  return true;
}

/** Parse a whole event stream held in memory (a buffered body); the same rules and bound as {@link SseParser}. */
export function parseSseEvents(body: Uint8Array | string, options?: Omit<SseParserOptions, 'onEvent'>): SseEvent[] {
  const out: SseEvent[] = [];
  const parser = new SseParser({ ...options, onEvent: (e) => out.push(e) });
  parser.push(body);
  parser.end();
  return out;
}
