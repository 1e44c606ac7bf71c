import { PassThrough } from 'node:stream';
import type { HeaderMap, Reply } from 'switchyard/sdk';

/** Response headers of an SSE reply. `x-accel-buffering` stops nginx-style proxies from holding events back. */
export function sseHeaders(extra?: HeaderMap): HeaderMap {
  return { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', 'x-accel-buffering': 'no', ...extra };
}

/**
 * A server-sent-events body the gateway writes JSON-RPC messages to. It is a Reply body (a Readable the kernel
 * pipes to the client); the kernel destroys it when the client goes away, which `onClose` reports.
 */
export class SseStream {
  readonly body = new PassThrough();
  private ended = false;
  private keepAlive: NodeJS.Timeout | undefined;
  onClose: (() => void) | undefined;

  constructor() {
    this.body.on('close', () => {
      this.ended = true;
      if (this.keepAlive) clearInterval(this.keepAlive);
      const cb = this.onClose;
      this.onClose = undefined;
      cb?.();
    });
    this.body.on('error', () => undefined);
  }

  get open(): boolean {
    return !this.ended && !this.body.destroyed;
  }

  /** Send an SSE comment now: Node holds response headers until the first body byte, and clients wait for them. */
  flushHeaders(): void {
    if (this.open) this.body.write(': stream open\n\n');
  }

  /** Send a comment every `ms` so idle intermediaries keep the connection. */
  startKeepAlive(ms: number): void {
    this.keepAlive = setInterval(() => {
      if (this.open) this.body.write(': keep-alive\n\n');
    }, ms);
    this.keepAlive.unref();
  }

  send(message: unknown): boolean {
    return this.sendData(JSON.stringify(message));
  }

  /** One `message` event whose data is already serialized, with an event id when given (resumable streams). */
  sendData(data: string, id?: string): boolean {
    if (!this.open) return false;
    this.body.write(id === undefined ? `event: message\ndata: ${data}\n\n` : `event: message\nid: ${id}\ndata: ${data}\n\n`);
    return true;
  }

  /**
   * A priming event (an id, empty data): gives the client a Last-Event-ID to resume from before any message was sent
   * (2025-11-25). Also sends the response headers, as flushHeaders does.
   */
  prime(id: string): void {
    if (this.open) this.body.write(`id: ${id}\ndata: \n\n`);
  }

  /** An SSE comment (ignored by clients). */
  comment(text: string): void {
    if (this.open) this.body.write(`: ${text}\n\n`);
  }

  event(name: string, data: string): void {
    if (this.open) this.body.write(`event: ${name}\ndata: ${data}\n\n`);
  }

  end(): void {
    if (this.ended) return;
    this.ended = true;
    if (this.keepAlive) clearInterval(this.keepAlive);
    this.body.end();
  }

  reply(headers?: HeaderMap): Reply {
    return { status: 200, headers: sseHeaders(headers), body: this.body, local: false };
  }
}
