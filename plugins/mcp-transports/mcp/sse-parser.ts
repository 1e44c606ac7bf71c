/**
 * An incremental server-sent-events parser (the WHATWG "event stream interpretation"), fed the decoded text of a
 * response body chunk by chunk. Lines end with CRLF, LF or CR, and a chunk may end anywhere, even between the CR and
 * the LF of one line ending. `data:` lines accumulate (joined with LF), `event:` names the event, `id:` sets the last
 * event id (kept across events, as EventSource does; an id containing NUL is ignored), `retry:` (digits only) reports
 * the reconnection delay, lines starting with `:` are comments, and a blank line dispatches the event. An event
 * without `data:` lines is not dispatched, but its id still counts.
 */
export interface SseEvent {
  /** The `event:` field; `message` when absent. */
  readonly type: string;
  readonly data: string;
  /** The last event id at dispatch (this event's own, or an earlier one). */
  readonly id: string | undefined;
}

export interface SseParserOptions {
  readonly onEvent: (event: SseEvent) => void;
  readonly onRetry?: (ms: number) => void;
  /** Characters of an unfinished line plus an undispatched event's data; beyond it, `push` throws. */
  readonly maxBuffer?: number;
}

const LF = 10;
const CR = 13;
const SPACE = 32;
const DEFAULT_MAX_BUFFER = 32 * 1024 * 1024;

export class SseParser {
  /** The last event id seen (`id:` field), kept across events. */
  lastEventId: string | undefined;
  private readonly onEvent: (event: SseEvent) => void;
  private readonly onRetry: ((ms: number) => void) | undefined;
  private readonly maxBuffer: number;
  /** The unfinished line of the previous chunk. */
  private pending = '';
  /** The previous chunk ended with CR: a LF starting the next one belongs to that line ending. */
  private skipLf = false;
  private first = true;
  private data = '';
  private dataLines = 0;
  private type: string | undefined;

  constructor(options: SseParserOptions) {
    this.onEvent = options.onEvent;
    this.onRetry = options.onRetry;
    this.maxBuffer = options.maxBuffer ?? DEFAULT_MAX_BUFFER;
  }

  push(chunk: string): void {
    if (chunk.length === 0) return;
    if (this.first) {
      this.first = false;
      if (chunk.charCodeAt(0) === 0xfeff) chunk = chunk.slice(1);
    }
    let start = 0;
    if (this.skipLf) {
      this.skipLf = false;
      if (chunk.charCodeAt(0) === LF) start = 1;
    }
    let text = chunk;
    if (this.pending !== '') {
      text = this.pending + (start === 0 ? chunk : chunk.slice(start));
      this.pending = '';
      start = 0;
    }
    const length = text.length;
    // Most streams use LF only: find line ends with indexOf, and look for CR only when there is one.
    const hasCr = text.indexOf('\r', start) !== -1;
    let lineStart = start;
    while (lineStart < length) {
      let end: number;
      if (!hasCr) {
        end = text.indexOf('\n', lineStart);
        if (end === -1) break;
        this.line(text, lineStart, end);
        lineStart = end + 1;
        continue;
      }
      const lf = text.indexOf('\n', lineStart);
      const cr = text.indexOf('\r', lineStart);
      end = cr === -1 ? lf : lf === -1 ? cr : Math.min(cr, lf);
      if (end === -1) break;
      this.line(text, lineStart, end);
      lineStart = end + 1;
      if (text.charCodeAt(end) === CR) {
        if (lineStart === length) this.skipLf = true;
        else if (text.charCodeAt(lineStart) === LF) lineStart++;
      }
    }
    if (lineStart < length) this.pending = text.slice(lineStart);
    if (this.pending.length + this.data.length > this.maxBuffer) {
      this.pending = '';
      this.data = '';
      this.dataLines = 0;
      throw new Error(`an SSE event exceeded ${this.maxBuffer} characters`);
    }
  }

  /** The stream ended: a last line without its line ending is still read, and an event it completes dispatched. */
  end(): void {
    if (this.pending !== '') {
      const text = this.pending;
      this.pending = '';
      this.line(text, 0, text.length);
    }
    this.dispatch();
  }

  private line(text: string, start: number, end: number): void {
    if (start === end) return this.dispatch();
    const c = text.charCodeAt(start);
    if (c === 58 /* : */) return; // a comment
    // The common fields, recognised without slicing the line first.
    if (c === 100 /* d */ && text.startsWith('data:', start)) {
      const value = text.slice(text.charCodeAt(start + 5) === SPACE ? start + 6 : start + 5, end);
      this.data = this.dataLines === 0 ? value : `${this.data}\n${value}`;
      this.dataLines++;
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
        this.data = this.dataLines === 0 ? value : `${this.data}\n${value}`;
        this.dataLines++;
        return;
      case 'event':
        this.type = value;
        return;
      case 'id':
        if (!value.includes('\0')) this.lastEventId = value;
        return;
      case 'retry':
        if (/^\d+$/.test(value)) this.onRetry?.(Number(value));
        return;
      default:
        return; // unknown fields are ignored
    }
  }

  private dispatch(): void {
    if (this.dataLines === 0) {
      this.type = undefined;
      return;
    }
    const event: SseEvent = { type: this.type || 'message', data: this.data, id: this.lastEventId };
    this.data = '';
    this.dataLines = 0;
    this.type = undefined;
    this.onEvent(event);
  }
}
