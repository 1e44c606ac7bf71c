import type { Logger } from 'switchyard/sdk';
import { cacheTtlMs } from '../http-cache/max-age.ts';
import { parseJwks } from './keys.ts';
import type { ParsedJwks, VerificationKey } from './keys.ts';

/** A source of verification keys by `kid`. `version` changes whenever the key set changes. */
export interface KeySource {
  readonly version: number;
  /** False while a remote set has never loaded (identity provider down at start): tokens cannot be checked yet. */
  readonly available: boolean;
  /** Seconds until the next attempt to load an unavailable set (for `Retry-After`). */
  retryAfterSeconds(): number;
  get(kid: string): VerificationKey | undefined;
  /**
   * Called on an unknown `kid`: a remote set refetches (rate-limited) and answers again; a static set answers
   * undefined at once.
   */
  refetchFor(kid: string): VerificationKey | undefined | Promise<VerificationKey | undefined>;
}

/** A key set loaded once (a `jwks.file`). */
export class StaticKeySource implements KeySource {
  readonly version = 0;
  readonly available = true;
  private readonly keys: ReadonlyMap<string, VerificationKey>;
  constructor(parsed: ParsedJwks) {
    this.keys = parsed.keys;
  }
  get(kid: string): VerificationKey | undefined {
    return this.keys.get(kid);
  }
  refetchFor(): undefined {
    return undefined;
  }
  retryAfterSeconds(): number {
    return 0;
  }
}

/** What one JWKS fetch returned. Throw for a transport failure. */
export interface JwksFetchResult {
  status: number;
  /** The `Cache-Control` header, if any. */
  cacheControl?: string;
  body: string;
}

export type JwksFetcher = () => Promise<JwksFetchResult>;

/** Timing of a remote JWKS. Defaults follow the reference gateway (15 min TTL, at least 60 s, retry after 15 s). */
export interface RemoteJwksTiming {
  /** TTL when the response has no `Cache-Control: max-age`. */
  defaultTtlMs: number;
  /** `max-age` is clamped to [minTtlMs, maxTtlMs]. */
  minTtlMs: number;
  maxTtlMs: number;
  /** At most one refetch caused by unknown `kid`s per this interval. */
  minRefetchIntervalMs: number;
  /** After a failed refresh, wait this long before the next background attempt. */
  retryAfterFailureMs: number;
  /** While no keys were ever loaded: first retry after about this long, doubling per failure up to `maxBackoffMs`. */
  initialBackoffMs: number;
  maxBackoffMs: number;
  now: () => number;
  /** In [0, 1): the jitter of each backoff delay. */
  random: () => number;
}

export const DEFAULT_JWKS_TIMING: RemoteJwksTiming = {
  defaultTtlMs: 15 * 60_000,
  minTtlMs: 60_000,
  maxTtlMs: 24 * 3_600_000,
  minRefetchIntervalMs: 30_000,
  retryAfterFailureMs: 15_000,
  initialBackoffMs: 1000,
  maxBackoffMs: 60_000,
  now: Date.now,
  random: Math.random,
};

/**
 * A JWKS fetched from a URL and kept across config reloads (it lives in the plugin resource cache).
 *
 * - `load()` runs at config load; once keys are held, a reload does not fetch again. When the first fetch fails
 *   (identity provider down), `load()` rejects with the reason for the caller to log, and the set keeps fetching in
 *   the background with bounded, jittered exponential backoff until keys arrive (ADR 0020); meanwhile `available`
 *   is false and tokens of this issuer cannot be checked.
 * - After the TTL (`Cache-Control: max-age`, clamped; 15 min by default) the next lookup starts a background
 *   refresh and keeps answering from the held keys meanwhile; a failed refresh keeps the old keys and is retried
 *   after `retryAfterFailureMs`.
 * - An unknown `kid` triggers an immediate refetch, at most once per `minRefetchIntervalMs` (a flood of tokens
 *   with made-up `kid`s costs the identity provider one request per interval, not one per token).
 */
export class RemoteJwks implements KeySource {
  readonly url: string;
  version = 0;
  private keys: ReadonlyMap<string, VerificationKey> = new Map();
  private fingerprint = '';
  private loaded = false;
  private expiresAt = 0;
  private lastKidRefetch = Number.NEGATIVE_INFINITY;
  private inflight: Promise<void> | undefined;
  /** Backoff while no keys were ever loaded. */
  private retryTimer: NodeJS.Timeout | undefined;
  private failures = 0;
  private nextAttemptAt = 0;
  private disposed = false;
  private fetcher: JwksFetcher;
  private readonly logger: Logger | undefined;
  private readonly timing: RemoteJwksTiming;
  /** Fetches made so far (tests and diagnostics). */
  fetches = 0;

  constructor(url: string, fetcher: JwksFetcher, logger?: Logger, timing: Partial<RemoteJwksTiming> = {}) {
    this.url = url;
    this.fetcher = fetcher;
    this.logger = logger;
    this.timing = { ...DEFAULT_JWKS_TIMING, ...timing };
  }

  /** Use another fetcher from now on (each config load hands over its own, bound to a live connection pool). */
  setFetcher(fetcher: JwksFetcher): void {
    this.fetcher = fetcher;
  }

  get available(): boolean {
    return this.loaded;
  }

  /**
   * Make sure keys are held: fetch now if none are. Rejects with a readable reason when that fetch fails; the set
   * then goes on fetching in the background (see the class comment).
   */
  async load(): Promise<void> {
    if (this.loaded) return;
    await this.refresh(true);
  }

  retryAfterSeconds(): number {
    return Math.max(1, Math.ceil((this.nextAttemptAt - this.timing.now()) / 1000));
  }

  /** Stop background fetching (the resource cache calls this when no config uses the set any more). */
  dispose(): void {
    this.disposed = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
  }

  /** Next background attempt while no keys are held: full delay doubling per failure, capped, half of it jittered. */
  private scheduleRetry(reason: string): void {
    if (this.disposed || this.loaded || this.retryTimer) return;
    const { initialBackoffMs, maxBackoffMs } = this.timing;
    const ceiling = Math.min(maxBackoffMs, initialBackoffMs * 2 ** Math.min(this.failures, 30));
    const delay = Math.round(ceiling / 2 + (this.timing.random() * ceiling) / 2);
    this.failures++;
    this.nextAttemptAt = this.timing.now() + delay;
    if (this.failures > 1) {
      this.logger?.warn('JWKS still unavailable; tokens of this issuer get 503 until it loads', { url: this.url, error: reason, attempts: this.failures, retryInMs: delay });
    }
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      if (this.disposed || this.loaded) return;
      const attempts = this.failures + 1;
      this.refresh(false).then(
        () => this.logger?.info('JWKS loaded; tokens of this issuer are checked again', { url: this.url, attempts }),
        () => undefined,
      );
    }, delay);
    this.retryTimer.unref();
  }

  get(kid: string): VerificationKey | undefined {
    if (this.timing.now() >= this.expiresAt && this.inflight === undefined) {
      this.refresh(false).catch(() => undefined);
    }
    return this.keys.get(kid);
  }

  refetchFor(kid: string): VerificationKey | undefined | Promise<VerificationKey | undefined> {
    const inflight = this.inflight;
    if (inflight) return inflight.then(() => this.keys.get(kid), () => this.keys.get(kid));
    const now = this.timing.now();
    if (now - this.lastKidRefetch < this.timing.minRefetchIntervalMs) return undefined;
    this.lastKidRefetch = now;
    this.logger?.info('unknown key id in a token; refetching the JWKS', { url: this.url });
    return this.refresh(false).then(
      () => this.keys.get(kid),
      () => this.keys.get(kid),
    );
  }

  private refresh(initial: boolean): Promise<void> {
    if (this.inflight) return this.inflight;
    const run = this.fetchOnce(initial).finally(() => {
      this.inflight = undefined;
    });
    this.inflight = run;
    return run;
  }

  private async fetchOnce(initial: boolean): Promise<void> {
    this.fetches++;
    let parsed: ParsedJwks;
    let ttl: number;
    try {
      const res = await this.fetcher();
      if (res.status !== 200) throw new Error(`the server answered HTTP ${res.status}`);
      let doc: unknown;
      try {
        doc = JSON.parse(res.body);
      } catch {
        throw new Error('the response is not JSON');
      }
      parsed = parseJwks(doc);
      if (parsed.keys.size === 0) {
        throw new Error(`it holds no usable signature key${parsed.problems.length ? ` (${parsed.problems.join('; ')})` : ''}`);
      }
      ttl = this.ttlFrom(res.cacheControl);
    } catch (err) {
      const reason = (err as Error).message ?? String(err);
      this.expiresAt = this.timing.now() + this.timing.retryAfterFailureMs;
      if (!this.loaded) this.scheduleRetry(reason);
      else this.logger?.warn('JWKS refresh failed; keeping the keys already held', { url: this.url, error: reason });
      throw new Error(reason);
    }
    if (parsed.problems.length > 0) {
      this.logger?.warn('JWKS entries skipped', { url: this.url, problems: parsed.problems });
    }
    this.expiresAt = this.timing.now() + ttl;
    this.loaded = true;
    this.failures = 0;
    if (parsed.fingerprint !== this.fingerprint) {
      this.keys = parsed.keys;
      this.fingerprint = parsed.fingerprint;
      this.version++;
      if (!initial) this.logger?.info('JWKS changed', { url: this.url, keys: parsed.keys.size });
    }
  }

  private ttlFrom(cacheControl: string | undefined): number {
    const { defaultTtlMs, minTtlMs, maxTtlMs } = this.timing;
    return cacheTtlMs(cacheControl, { defaultMs: defaultTtlMs, minMs: minTtlMs, maxMs: maxTtlMs });
  }
}
