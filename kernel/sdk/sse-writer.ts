/**
 * Server-sent events (the WHATWG event-stream format): serializing events and the one bounded writer, for every
 * plugin that writes `text/event-stream` (ADR 0030). Parsing is sse.ts.
 */
import { PassThrough } from 'node:stream';
import type { Readable } from 'node:stream';

/** One event to write. */
export interface SseEventInit {
  /** The `event:` field; none written when absent. */
  readonly event?: string;
  readonly id?: string;
  /** Written as one `data:` line per line of the text (CRLF, CR and LF all end a line). */
  readonly data: string;
  /** A `retry:` field, in ms. */
  readonly retry?: number;
}

const LINE_BREAK = /\r\n|\r|\n/;

/** Serialize one event, ending with its blank line. Field values must not hold line breaks (only `data` may). */
export function formatSseEvent(init: SseEventInit): string {
  let out = '';
  if (init.event !== undefined) out += `event: ${init.event}\n`;
  if (init.id !== undefined) out += `id: ${init.id}\n`;
  if (init.retry !== undefined) out += `retry: ${init.retry}\n`;
  const data = init.data;
  if (data.indexOf('\n') === -1 && data.indexOf('\r') === -1) return `${out}data: ${data}\n\n`;
  for (const line of data.split(LINE_BREAK)) out += `data: ${line}\n`;
  return `${out}\n`;
}

/** Serialize a comment (clients ignore it; it keeps idle connections open and flushes headers). */
export function formatSseComment(text: string): string {
  return text.indexOf('\n') === -1 && text.indexOf('\r') === -1 ? `: ${text}\n\n` : `${text.split(LINE_BREAK).map((l) => `: ${l}\n`).join('')}\n`;
}

/** Response headers of an event stream. `x-accel-buffering: no` stops nginx-style proxies holding events back. */
export const SSE_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'content-type': 'text/event-stream',
  'cache-control': 'no-cache',
  'x-accel-buffering': 'no',
});

export interface SseWriterOptions {
  /**
   * Most bytes written but not yet taken by the client; past it the client is too slow, the body is destroyed
   * (the kernel cuts the response) and later writes are dropped. Default 8 MiB. A single larger event is written when
   * nothing else waits.
   */
  readonly maxBuffered?: number;
  /** Send a `: keep-alive` comment this often, in ms (0 or absent: never). */
  readonly keepAliveMs?: number;
}

/**
 * An event-stream response body to write events to: hand `body` to the kernel as a reply body. Writes after the
 * body closed (the client left) are dropped and return false; `onClose` reports the close. Bounded: a client
 * that does not read cannot make the gateway buffer more than `maxBuffered`.
 */
export class SseWriter {
  readonly body: Readable;
  onClose: (() => void) | undefined;
  private readonly stream: PassThrough;
  private readonly maxBuffered: number;
  private timer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(options?: SseWriterOptions) {
    this.maxBuffered = options?.maxBuffered ?? 8 * 1024 * 1024;
    const stream = (this.stream = new PassThrough());
    this.body = stream;
    stream.on('error', () => undefined);
    stream.on('close', () => {
      this.closed = true;
      if (this.timer) clearInterval(this.timer);
      const cb = this.onClose;
      this.onClose = undefined;
      cb?.();
    });
    const every = options?.keepAliveMs ?? 0;
    if (every > 0) {
      this.timer = setInterval(() => this.write(formatSseComment('keep-alive')), every);
      this.timer.unref();
    }
  }

  /** Whether writes still reach the client. */
  get open(): boolean {
    return !this.closed && this.stream.writable;
  }

  /**
   * Whether what was written waits for the client past the stream's high-water mark: a producer that can wait (an
   * upstream stream serving this response alone) stops reading until `whenDrained`.
   */
  get backlogged(): boolean {
    return this.open && this.stream.writableNeedDrain;
  }

  /** Run `callback` once, when the backlog was taken by the client or the stream closed (at once when neither waits). */
  whenDrained(callback: () => void): void {
    if (!this.backlogged) return callback();
    const done = (): void => {
      this.stream.off('drain', done);
      this.stream.off('close', done);
      callback();
    };
    this.stream.on('drain', done);
    this.stream.on('close', done);
  }

  /** Write one event; false when the stream is closed (or was just closed for a slow client). */
  send(init: SseEventInit): boolean {
    return this.write(formatSseEvent(init));
  }

  /** Write a comment; false when the stream is closed. */
  comment(text: string): boolean {
    return this.write(formatSseComment(text));
  }

  /** Write serialized event-stream text as it is. */
  write(text: string): boolean {
    if (!this.open) return false;
    // What waits on both sides of the PassThrough: a body nobody reads fills the readable side first. One event larger
    // than the bound alone goes when nothing waits (its producer bounds its size: an MCP answer may be 32 MiB), so at
    // most one such event waits beyond the bound; a client that has not taken the one before is too slow.
    const waiting = this.stream.writableLength + this.stream.readableLength;
    if (waiting > 0 && waiting + text.length > this.maxBuffered) {
      this.stream.destroy(new Error(`the client reads too slowly: more than ${this.maxBuffered} bytes of events wait`));
      return false;
    }
    this.stream.write(text);
    return true;
  }

  /** End the stream after what was written. */
  end(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    if (this.open) this.stream.end();
  }
}
