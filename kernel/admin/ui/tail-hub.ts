import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AdminSource } from '../gateway-endpoints.ts';

/** Browsers tailing at once; the next one gets 429. */
export const MAX_TAIL_CLIENTS = 4;
/** Requests sent per flush (4 flushes a second); the rest are counted as dropped, never queued. */
const MAX_EVENTS_PER_FLUSH = 250;
const FLUSH_MS = 250;
/** A client whose socket holds this much unsent data is slow: it misses batches until it drains. */
const SLOW_CLIENT_BYTES = 256 * 1024;

/**
 * The live tail (`/ui/api/tail`, server-sent events). The data plane's only cost is the access log's tap pushing the
 * request's log fields into an array, and only while someone watches: the tap is set when the first browser attaches
 * and removed when the last leaves. Batches are written a few times a second; a burst beyond a batch, or a client
 * that cannot keep up, loses events (counted in `dropped`), so no request ever waits for a browser.
 */
export class TailHub {
  private readonly source: AdminSource;
  private readonly clients = new Set<{ res: ServerResponse; dropped: number }>();
  private pending: Record<string, unknown>[] = [];
  /** Set on the access log while someone watches: a full batch makes each further request one increment. */
  private readonly listener = {
    full: false,
    dropped: 0,
    push: (fields: Record<string, unknown>): void => {
      this.pending.push(fields);
      if (this.pending.length >= MAX_EVENTS_PER_FLUSH) this.listener.full = true;
    },
  };
  private unsubscribe: (() => void) | undefined;
  private timer: NodeJS.Timeout | undefined;

  constructor(source: AdminSource) {
    this.source = source;
  }

  attach(req: IncomingMessage, res: ServerResponse): void {
    if (!this.source.tail) {
      res.writeHead(501, { 'content-type': 'application/json' }).end('{"error":{"message":"this gateway has no live tail"}}\n');
      return;
    }
    if (this.clients.size >= MAX_TAIL_CLIENTS) {
      res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '5' }).end(`{"error":{"message":"at most ${MAX_TAIL_CLIENTS} live tails at once"}}\n`);
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store', connection: 'keep-alive' });
    res.write(': switchyard live tail\n\n');
    const client = { res, dropped: 0 };
    this.clients.add(client);
    if (!this.unsubscribe) {
      const listener = this.listener;
      listener.full = false;
      listener.dropped = 0;
      this.unsubscribe = this.source.tail(listener);
      this.timer = setInterval(() => this.flush(), FLUSH_MS);
      this.timer.unref();
    }
    const leave = (): void => {
      this.clients.delete(client);
      if (this.clients.size === 0) this.stop();
    };
    req.on('close', leave);
    res.on('close', leave);
  }

  private flush(): void {
    const events = this.pending;
    const overflow = this.listener.dropped;
    if (events.length === 0 && overflow === 0) return;
    this.pending = [];
    this.listener.dropped = 0;
    this.listener.full = false;
    let text: string | undefined;
    for (const client of this.clients) {
      if (client.res.writableLength > SLOW_CLIENT_BYTES) {
        client.dropped += events.length + overflow;
        continue;
      }
      const dropped = client.dropped + overflow;
      client.dropped = 0;
      text ??= `data: ${JSON.stringify({ requests: events })}\n\n`;
      client.res.write(dropped > 0 ? `event: dropped\ndata: ${dropped}\n\n${text}` : text);
    }
  }

  private stop(): void {
    this.unsubscribe?.();
    this.unsubscribe = undefined;
    clearInterval(this.timer);
    this.timer = undefined;
    this.pending = [];
  }
}
