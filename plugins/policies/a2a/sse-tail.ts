import { StringDecoder } from 'node:string_decoder';

/** Longest event (or pending line) kept; a longer one is skipped, never buffered without bound. */
const MAX_EVENT = 1024 * 1024;

/**
 * Follows a `text/event-stream` as it passes and keeps only the `data` of the last event and of the last event
 * that mentions a task `state`, so the outcome of a stream is known at its end without parsing every event.
 */
export class SseTail {
  /** Data of the last complete event. */
  last: string | undefined = undefined;
  /** Data of the last complete event whose text contains `"state"` (a task or status update). */
  lastWithState: string | undefined = undefined;
  private readonly decoder = new StringDecoder('utf8');
  private pending = '';
  private data: string[] = [];
  private size = 0;
  private skipping = false;
  /** The previous chunk ended with `\r`: a `\n` starting the next one belongs to it. */
  private afterCr = false;

  push(chunk: Buffer): void {
    let text = this.decoder.write(chunk);
    if (this.afterCr && text.startsWith('\n')) text = text.slice(1);
    this.afterCr = text.endsWith('\r');
    let start = 0;
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (c !== 10 && c !== 13) continue;
      this.line(this.pending + text.slice(start, i));
      this.pending = '';
      if (c === 13 && text.charCodeAt(i + 1) === 10) i++;
      start = i + 1;
    }
    const rest = text.slice(start);
    if (this.pending.length + rest.length > MAX_EVENT) {
      this.pending = '';
      this.skipping = true;
    } else this.pending += rest;
  }

  /** The stream ended: a last event not closed by a blank line still counts. */
  end(): void {
    if (this.pending !== '') this.line(this.pending);
    this.pending = '';
    this.line('');
  }

  private line(line: string): void {
    if (line === '') {
      if (!this.skipping && this.data.length > 0) {
        const data = this.data.join('\n');
        this.last = data;
        if (data.includes('"state"')) this.lastWithState = data;
      }
      this.data = [];
      this.size = 0;
      this.skipping = false;
      return;
    }
    if (this.skipping || !line.startsWith('data')) return;
    let value: string;
    if (line.length === 4) value = '';
    else if (line.charCodeAt(4) === 58 /* : */) value = line.charCodeAt(5) === 32 ? line.slice(6) : line.slice(5);
    else return; // `dataX: …` is another field
    this.size += value.length;
    if (this.size > MAX_EVENT) {
      this.skipping = true;
      this.data = [];
      return;
    }
    this.data.push(value);
  }
}
