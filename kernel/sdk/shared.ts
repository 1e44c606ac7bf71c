/**
 * A few numbers shared by every worker of the gateway (docs/deploy.md "Workers"), for state that must stay exact
 * whichever worker serves a request: a rate-limit bucket, a counter. Read and write `values` only between `lock()`
 * and `unlock()`, and keep that section short (no I/O, no await): the other workers spin while it is held.
 */
export interface SharedCell {
  readonly values: Float64Array;
  lock(): void;
  unlock(): void;
}

/**
 * Results of remote fetches shared by the workers, so a JWKS is fetched once per change for the whole gateway, not
 * once per worker. `fetch(key, want, load)` runs `load` in one worker and hands its result to every worker asking for
 * the same key while it runs; a later asker gets that result too when it is at most `want.maxAgeMs` old and newer
 * than `want.after` (the `at` of what the asker holds: asking again because its data looks stale must not hand it
 * back the same data). The result must be structured-cloneable (plain data); `at` is when it was loaded (ms epoch).
 * With one worker only concurrent callers are joined.
 */
export interface SharedFetches {
  fetch<T>(key: string, want: { readonly maxAgeMs: number; readonly after?: number }, load: () => Promise<T>): Promise<{ value: T; at: number }>;
}

/** Most numbers a shared cell holds. */
export const SHARED_CELL_VALUES = 6;

/**
 * Facts one worker of the gateway tells the others (an MCP session its client ended, so no other worker resumes
 * it). `subscribe(topic, on)` joins a topic: `post` sends a structured-cloneable message to every other subscriber
 * of the topic in the other workers, delivered asynchronously (not to the poster); `close` leaves. With one worker
 * there is nobody else: `post` does nothing. A message posted with `keepMs` is also kept that long by the
 * supervisor and handed to the topic's subscribers in workers that start later (a worker restarted after a crash):
 * `subscribe` delivers those first, before it returns.
 */
export interface SharedEvents {
  /** Whether the gateway runs other workers (state kept in memory then exists once per worker). */
  readonly others: boolean;
  subscribe(topic: string, on: (message: unknown) => void): SharedTopic;
}

/** A subscription of `SharedEvents`. */
export interface SharedTopic {
  post(message: unknown, keepMs?: number): void;
  close(): void;
}
