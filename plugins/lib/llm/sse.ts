import { StringDecoder } from 'node:string_decoder';

/** One server-sent event: its `event:` name (when given) and its `data:` lines joined by `\n`. */
export interface SseEvent {
  event: string | undefined;
  data: string;
}

/**
 * An incremental SSE parser (the WHATWG event-stream format): bytes in, complete events out. Handles any chunking,
 * `\r\n`, `\r` and `\n` line ends, comments and multi-line data. Fields other than `event` and `data` are ignored.
 */
export class SseParser {
  private readonly decoder = new StringDecoder('utf8');
  private buffer = '';
  private event: string | undefined = undefined;
  private data: string[] = [];
  /** Bytes buffered while waiting for the end of a line; bounded against a stream that never ends a line. */
  private readonly maxLine: number;

  constructor(maxLine = 8 * 1024 * 1024) {
    this.maxLine = maxLine;
  }

  feed(chunk: Buffer | string): SseEvent[] {
    this.buffer += typeof chunk === 'string' ? chunk : this.decoder.write(chunk);
    return this.drain(false);
  }

  /** The end of the stream: an event not followed by a blank line is still delivered. */
  end(): SseEvent[] {
    this.buffer += this.decoder.end();
    const out = this.drain(true);
    if (this.data.length > 0 || this.event !== undefined) out.push(this.take());
    return out;
  }

  private take(): SseEvent {
    const ev = { event: this.event, data: this.data.join('\n') };
    this.event = undefined;
    this.data = [];
    return ev;
  }

  private drain(final: boolean): SseEvent[] {
    const out: SseEvent[] = [];
    let start = 0;
    const buf = this.buffer;
    for (;;) {
      let end = -1;
      let next = -1;
      for (let i = start; i < buf.length; i++) {
        const c = buf.charCodeAt(i);
        if (c === 10) {
          end = i;
          next = i + 1;
          break;
        }
        if (c === 13) {
          // A `\r` at the very end may be the first half of `\r\n`: wait for more unless the stream ended.
          if (i + 1 === buf.length && !final) break;
          end = i;
          next = buf.charCodeAt(i + 1) === 10 ? i + 2 : i + 1;
          break;
        }
      }
      if (end === -1) break;
      this.line(buf.slice(start, end), out);
      start = next;
    }
    this.buffer = start === 0 ? buf : buf.slice(start);
    if (final && this.buffer.length > 0) {
      this.line(this.buffer, out);
      this.buffer = '';
    }
    if (this.buffer.length > this.maxLine) throw new Error(`server-sent event line longer than ${this.maxLine} bytes`);
    return out;
  }

  private line(line: string, out: SseEvent[]): void {
    if (line.length === 0) {
      if (this.data.length > 0 || this.event !== undefined) out.push(this.take());
      return;
    }
    if (line.charCodeAt(0) === 58) return; // `:` comment
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.charCodeAt(0) === 32) value = value.slice(1);
    if (field === 'data') this.data.push(value);
    else if (field === 'event') this.event = value;
  }
}

/** Serialize one event (`event:` line only when named). */
export function formatSse(event: string | undefined, data: string): string {
  return event === undefined ? `data: ${data}\n\n` : `event: ${event}\ndata: ${data}\n\n`;
}
