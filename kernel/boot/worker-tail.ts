import type { TailListener } from '../admin/gateway-endpoints.ts';

/** Requests sent to the supervisor per batch (4 batches a second); the rest are counted as dropped, never queued. */
const MAX_EVENTS_PER_BATCH = 250;
const BATCH_MS = 250;

/**
 * A worker's side of the admin UI's live tail under a supervisor: while the supervisor asks for it, the access log's
 * tap collects finished requests into a bounded batch, posted every 250 ms. Beyond a batch, requests only count
 * themselves as dropped (as in one process, kernel/admin/ui/tail-hub.ts), so the data plane never waits for a browser.
 */
export class WorkerTail {
  private readonly gateway: { tail(listener: TailListener): () => void };
  private readonly post: (events: Record<string, unknown>[], dropped: number) => void;
  private events: Record<string, unknown>[] = [];
  private readonly listener: TailListener = {
    full: false,
    dropped: 0,
    push: (fields) => {
      this.events.push(fields);
      if (this.events.length >= MAX_EVENTS_PER_BATCH) (this.listener as { full: boolean }).full = true;
    },
  };
  private unsubscribe: (() => void) | undefined;
  private timer: NodeJS.Timeout | undefined;

  constructor(gateway: { tail(listener: TailListener): () => void }, post: (events: Record<string, unknown>[], dropped: number) => void) {
    this.gateway = gateway;
    this.post = post;
  }

  start(): void {
    if (this.unsubscribe) return;
    this.unsubscribe = this.gateway.tail(this.listener);
    this.timer = setInterval(() => this.flush(), BATCH_MS);
    this.timer.unref();
  }

  stop(): void {
    this.unsubscribe?.();
    this.unsubscribe = undefined;
    clearInterval(this.timer);
    this.timer = undefined;
    this.events = [];
    this.listener.dropped = 0;
    (this.listener as { full: boolean }).full = false;
  }

  private flush(): void {
    const events = this.events;
    const dropped = this.listener.dropped;
    if (events.length === 0 && dropped === 0) return;
    this.events = [];
    this.listener.dropped = 0;
    (this.listener as { full: boolean }).full = false;
    this.post(events, dropped);
  }
}
