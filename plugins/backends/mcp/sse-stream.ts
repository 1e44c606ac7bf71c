import type { Readable } from 'node:stream';
import { SSE_HEADERS, SseWriter, formatSseComment, formatSseEvent } from 'switchyard/sdk';
import type { HeaderMap, Reply } from 'switchyard/sdk';

/** Response headers of an SSE reply (the SDK's: `x-accel-buffering` stops nginx-style proxies holding events back). */
export function sseHeaders(extra?: HeaderMap): HeaderMap {
  return { ...SSE_HEADERS, ...extra };
}

const STREAM_OPEN = formatSseComment('stream open');
const KEEP_ALIVE = formatSseComment('keep-alive');

/**
 * A server-sent-events body the gateway writes JSON-RPC messages to, on the SDK's bounded `SseWriter` (a client
 * that stops reading is cut rather than buffered without end). It is a Reply body (a Readable the kernel pipes to
 * the client); the kernel destroys it when the client goes away, which `onClose` reports.
 */
export class SseStream {
  /** The writer, made on first use: a response captured whole (see `capture`) never needs one. */
  private writer: SseWriter | undefined;
  private ended = false;
  private keepAlive: NodeJS.Timeout | undefined;
  /** Set while capturing (see `capture`): what was written so far. */
  private captured: string | undefined;
  onClose: (() => void) | undefined;

  private get out(): SseWriter {
    if (this.writer) return this.writer;
    const writer = (this.writer = new SseWriter());
    writer.onClose = () => {
      this.ended = true;
      if (this.keepAlive) clearInterval(this.keepAlive);
      const cb = this.onClose;
      this.onClose = undefined;
      cb?.();
    };
    return writer;
  }

  get body(): Readable {
    return this.out.body;
  }

  get open(): boolean {
    return !this.ended && this.writer?.body.destroyed !== true;
  }

  /** Whether events wait for the client past the writer's high-water mark (SseWriter.backlogged). */
  get backlogged(): boolean {
    return this.captured === undefined && this.writer?.backlogged === true;
  }

  /** Run `callback` once the client took the backlog, or the stream closed. */
  whenDrained(callback: () => void): void {
    if (this.writer && this.captured === undefined) this.writer.whenDrained(callback);
    else callback();
  }

  /**
   * Keep what is written instead of streaming it, until `reply`: a response complete before it started (an answer
   * that came quickly) is then one string body, written at once, rather than a stream of chunks.
   */
  capture(): void {
    this.captured ??= '';
  }

  private write(text: string): void {
    if (this.captured !== undefined) this.captured += text;
    else this.out.write(text);
  }

  /** Send an SSE comment now: Node holds response headers until the first body byte, and clients wait for them. */
  flushHeaders(): void {
    if (this.open) this.write(STREAM_OPEN);
  }

  /** Send a comment every `ms` so idle intermediaries keep the connection. */
  startKeepAlive(ms: number): void {
    this.keepAlive = setInterval(() => {
      if (this.open) this.write(KEEP_ALIVE);
    }, ms);
    this.keepAlive.unref();
  }

  send(message: unknown): boolean {
    return this.sendData(JSON.stringify(message));
  }

  /** One `message` event whose data is already serialized, with an event id when given (resumable streams). */
  sendData(data: string, id?: string): boolean {
    if (!this.open) return false;
    this.write(formatSseEvent({ event: 'message', id, data }));
    return true;
  }

  /**
   * A priming event (an id, empty data): gives the client a Last-Event-ID to resume from before any message was sent
   * (2025-11-25). Also sends the response headers, as flushHeaders does.
   */
  prime(id: string): void {
    if (this.open) this.write(formatSseEvent({ id, data: '' }));
  }

  /** An SSE comment (ignored by clients). */
  comment(text: string): void {
    if (this.open) this.write(formatSseComment(text));
  }

  event(name: string, data: string): void {
    if (this.open) this.write(formatSseEvent({ event: name, data }));
  }

  end(): void {
    if (this.ended) return;
    this.ended = true;
    if (this.keepAlive) clearInterval(this.keepAlive);
    if (this.captured === undefined) this.out.end();
  }

  /** The reply: the stream, or the captured text as one body when the stream ended while capturing. */
  reply(headers?: HeaderMap): Reply {
    const captured = this.captured;
    if (captured !== undefined) {
      this.captured = undefined;
      if (this.ended) return { status: 200, headers: sseHeaders(headers), body: captured, local: false };
      if (captured !== '') this.out.write(captured);
    }
    return { status: 200, headers: sseHeaders(headers), body: this.body, local: false };
  }
}
