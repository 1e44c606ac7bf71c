// Virtual keys and their budgets (docs/llm-economics.md, ADR 0035): what a key is, and the store contract every
// backend (embedded SQLite, Redis) implements. Secrets never reach a store: only their SHA-256 digest does.

/** What a budget counts: USD from the price catalog, LLM tokens (input + output), or requests. */
export type BudgetUnit = 'usd' | 'tokens' | 'requests';
/** The window a budget resets on (UTC calendar windows); `total` never resets. */
export type BudgetPeriod = 'minute' | 'hour' | 'day' | 'month' | 'total';

export interface Budget {
  readonly unit: BudgetUnit;
  readonly limit: number;
  readonly period: BudgetPeriod;
}

/** A key as stored and listed: everything but the secret. */
export interface KeyRecord {
  /** Public id (`vk_...`): names the key in the management API, logs and CEL; not a credential. */
  readonly id: string;
  readonly name?: string;
  readonly owner?: string;
  readonly team?: string;
  /** Models the key may call (`*` wildcards); absent = any. */
  readonly models?: readonly string[];
  /** Route names the key may use; absent = any. */
  readonly routes?: readonly string[];
  readonly budgets: readonly Budget[];
  readonly metadata?: Readonly<Record<string, unknown>>;
  /** The secret's first characters, to recognise a key in a list (`sk-swy-AbCd...`). */
  readonly prefix: string;
  readonly createdAt: string;
  readonly rotatedAt?: string;
  readonly revokedAt?: string;
  /** `config`: declared in the config file (read-only through the API); `api`: created through the management API. */
  readonly source: 'config' | 'api';
}

/** One counter a reservation takes from: refused when its value has reached `limit`. */
export interface CounterLine {
  readonly counter: string;
  readonly limit: number;
  readonly amount: number;
  /** Epoch ms after which the counter's window is over (0: never). */
  readonly expiresAt: number;
  /** Where the store keeps its lookup of this counter between reservations (CounterMemo; ADR 0110). */
  readonly memo?: CounterMemo;
}

/** A change to a counter after the answer (the real cost minus what was reserved; may be negative). */
export interface CounterDelta {
  readonly counter: string;
  readonly amount: number;
  readonly expiresAt: number;
  /**
   * No budget checks this counter (a key's lifetime usage): a store may sum it and write it up to LAZY_MS later
   * (ADR 0072). Reads of counters (`values`) still see it.
   */
  readonly lazy?: boolean;
  /**
   * A lazy delta its caller summed for LAZY_MS or more already (the policy's key numbers, ADR 0187): due at once, it
   * rides on the next reservations a few at a time like any lazy sum come due, instead of waiting LAZY_MS more.
   */
  readonly summed?: boolean;
  /** Where the store keeps its lookup of this counter between settlements (CounterMemo; ADR 0107, 0110). */
  readonly memo?: CounterMemo;
}

/**
 * What a key store found for one counter (or key), kept by the caller between uses (ADR 0107, 0110): a caller that
 * reserves or settles the same counter again and again (the policy: a key's budget slots and lifetime counters) passes
 * the same object each time, and the store skips its lookup while what it kept is still its own. Opaque to the
 * caller: start with `{}`, one per counter (a line and the delta that settles it may share one).
 */
export interface CounterMemo {
  owner?: unknown;
  entry?: unknown;
  epoch?: number;
}

/**
 * What `reserve` answers when the digest it was given no longer names a live key (rotated or revoked since the key
 * was found, maybe on another replica): nothing is reserved.
 */
export const KEY_GONE = -2;

/**
 * How long opening a networked store (Redis, Postgres) waits for the server's first answer: one that takes the
 * connection and never answers fails the config load instead of holding it, and every reload after it, for ever.
 */
export const OPEN_DEADLINE_MS = 10_000;

/**
 * Where keys and budget counters live. `reserve` is atomic across processes: it checks every line and, only if none
 * has reached its limit, adds every amount (so concurrent requests never both take the last of a budget unseen).
 * Lookups may be synchronous (SQLite) or not (Redis).
 */
export interface KeyStore {
  readonly kind: string;
  /**
   * The key whose secret has this SHA-256 hex digest, revoked ones included (the caller checks `revokedAt`). The
   * shared stores answer from a cache (key-cache.ts; Redis: keys-version-cache.ts), which the reservation then confirms.
   * `memo`: where the store keeps its lookup of the key between requests, the same one as `reserve`'s `keyMemo` (one
   * per key; ADR 0110, 0112).
   */
  find(digest: string, memo?: CounterMemo): KeyRecord | undefined | Promise<KeyRecord | undefined>;
  /**
   * Index of the first line that has reached its limit (nothing taken), or -1 when every amount was taken. With
   * `digest` (the key the request was admitted with, found in this store), a store that serves `find` from a cache
   * checks in the same round trip that the digest still names a live key, and answers KEY_GONE if not (nothing
   * taken); a store whose `find` always reads the store may ignore it. A digest with no lines only checks the key.
   * `keyMemo`: where the store keeps its lookup of the key between reservations (one per key; ADR 0110, 0112).
   */
  reserve(lines: readonly CounterLine[], digest?: string, keyMemo?: CounterMemo): number | Promise<number>;
  settle(deltas: readonly CounterDelta[]): void | Promise<void>;
  /** Current values of counters (0 when absent or expired). */
  values(counters: readonly string[]): Promise<number[]>;
  create(record: KeyRecord, digest: string): Promise<void>;
  get(id: string): Promise<KeyRecord | undefined>;
  list(): Promise<KeyRecord[]>;
  /** Replace a key's secret digest (the old secret stops working at once); false when there is no such live key. */
  rotate(id: string, digest: string, prefix: string, at: string): Promise<boolean>;
  revoke(id: string, at: string): Promise<boolean>;
  close(): void | Promise<void>;
}
