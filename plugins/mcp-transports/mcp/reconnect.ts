/** How the GET stream (and a POST stream that can be resumed) is reopened after it drops. */
export interface ReconnectOptions {
  readonly initialDelayMs: number;
  readonly maxDelayMs: number;
  readonly growFactor: number;
  /** Consecutive attempts that bring nothing before giving up. */
  readonly maxRetries: number;
}

/** The SDK client's delays (1 s, growing by 1.5 to 30 s), with a few more attempts than its 2. */
export const DEFAULT_RECONNECT: ReconnectOptions = { initialDelayMs: 1000, maxDelayMs: 30_000, growFactor: 1.5, maxRetries: 5 };

/**
 * The timers of one connection's reconnect attempts: the backoff (or the server's `retry:`), and every pending
 * attempt cancelled at once when the connection closes.
 */
export class Reconnects {
  readonly options: ReconnectOptions;
  /** The server's `retry:` (ms), used instead of the backoff. */
  serverRetryMs: number | undefined = undefined;
  private readonly timers = new Set<NodeJS.Timeout>();
  private stopped = false;
  private readonly onerror: (error: Error) => void;

  constructor(options: ReconnectOptions, onerror: (error: Error) => void) {
    this.options = options;
    this.onerror = onerror;
  }

  /** The wait before attempt `failures + 1`. */
  delay(failures: number): number {
    if (this.serverRetryMs !== undefined) return this.serverRetryMs;
    const r = this.options;
    return Math.min(r.initialDelayMs * r.growFactor ** failures, r.maxDelayMs);
  }

  /** Run `fn` after `ms` unless stopped by then; its failure goes to `onerror`. */
  later(ms: number, fn: () => void | Promise<void>): void {
    if (this.stopped) return;
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      if (this.stopped) return;
      try {
        fn()?.catch((err: Error) => this.onerror(err));
      } catch (err) {
        this.onerror(err as Error);
      }
    }, ms);
    this.timers.add(timer);
  }

  stop(): void {
    this.stopped = true;
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
  }
}
