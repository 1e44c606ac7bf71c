import type { PluginSpans } from 'switchyard/sdk';

/** A credential and the time (ms since the epoch) after which it must not be sent. */
export interface ExpiringToken {
  readonly token: string;
  readonly expiresAt: number;
}

/** Default deadline for one token fetch (BEHAVIOUR.md §2.7: tokens are fetched with a 5 s timeout). */
export const TOKEN_FETCH_TIMEOUT_MS = 5000;
/** Refresh at most this long before expiry... */
const MAX_REFRESH_AHEAD_MS = 5 * 60_000;
/** ...and never send a token that expires within this margin (clock skew, time in flight). */
const EXPIRY_MARGIN_MS = 10_000;

interface Entry {
  token: ExpiringToken | undefined;
  /** When to start fetching a replacement while still serving `token`. */
  refreshAt: number;
  inflight: Promise<string> | undefined;
}

/**
 * Tokens by key (an audience, a scope), fetched once and reused until near expiry. A fresh token is returned
 * synchronously, so the per-attempt hook stays synchronous on the hot path; concurrent misses share one fetch;
 * a token inside its refresh window is still served while one background fetch replaces it. Failures are not
 * cached: the next request tries again.
 */
export class TokenCache {
  private readonly entries = new Map<string, Entry>();
  private readonly timeoutMs: number;
  private readonly now: () => number;

  constructor(options: { timeoutMs?: number; now?: () => number } = {}) {
    this.timeoutMs = options.timeoutMs ?? TOKEN_FETCH_TIMEOUT_MS;
    this.now = options.now ?? Date.now;
  }

  /** The token for `key`: a string when cached and fresh, else a promise of one. */
  get(key: string, fetch: () => Promise<ExpiringToken>, describe = 'token'): string | Promise<string> {
    let entry = this.entries.get(key);
    if (!entry) this.entries.set(key, (entry = { token: undefined, refreshAt: 0, inflight: undefined }));
    const now = this.now();
    const current = entry.token;
    if (current && now < current.expiresAt - EXPIRY_MARGIN_MS) {
      if (now >= entry.refreshAt && !entry.inflight) {
        // Serve the current token; replace it in the background.
        this.start(entry, fetch, describe).catch(() => undefined);
      }
      return current.token;
    }
    return entry.inflight ?? this.start(entry, fetch, describe);
  }

  /** Forget every token (a credential change on reload builds a new cache instead). */
  clear(): void {
    this.entries.clear();
  }

  private start(entry: Entry, fetch: () => Promise<ExpiringToken>, describe: string): Promise<string> {
    const started = this.now();
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`timed out after ${this.timeoutMs}ms fetching the ${describe}`)), this.timeoutMs);
      timer.unref?.();
    });
    const run = Promise.race([new Promise<ExpiringToken>((resolve) => resolve(fetch())), deadline]).then(
      (token) => {
        clearTimeout(timer);
        if (typeof token?.token !== 'string' || token.token.length === 0) throw new Error(`the ${describe} response held no token`);
        const expiresAt = Number.isFinite(token.expiresAt) ? token.expiresAt : started + MAX_REFRESH_AHEAD_MS;
        const lifetime = Math.max(0, expiresAt - started);
        entry.token = { token: token.token, expiresAt };
        entry.refreshAt = expiresAt - Math.min(MAX_REFRESH_AHEAD_MS, lifetime / 2);
        entry.inflight = undefined;
        return token.token;
      },
      (err: unknown) => {
        clearTimeout(timer);
        entry.inflight = undefined;
        throw err;
      },
    );
    entry.inflight = run;
    return run;
  }
}

/** The `exp` claim of a JWT, in ms since the epoch; undefined when the token is not a readable JWT. */
export function jwtExpiry(jwt: string): number | undefined {
  const part = jwt.split('.')[1];
  if (!part) return undefined;
  try {
    const claims = JSON.parse(Buffer.from(part, 'base64url').toString('utf8')) as { exp?: unknown };
    return typeof claims.exp === 'number' ? claims.exp * 1000 : undefined;
  } catch {
    return undefined;
  }
}

/**
 * `fetch` as a CLIENT span of the request that needed the token (`backendAuth <provider> token`, with
 * `cloud.provider` and what was fetched): cloud SDKs make their own HTTP calls, which the kernel's upstream spans do
 * not see. Whether the gateway traces is asked per fetch (tracing starts after the first load); a fetch is rare
 * (tokens are cached), so this costs nothing per request.
 */
export function tracedFetch<T>(spans: PluginSpans | undefined, provider: 'gcp' | 'azure' | 'aws', token: string, fetch: () => Promise<T>): () => Promise<T> {
  if (!spans) return fetch;
  return () => {
    const span = spans.start(`backendAuth ${provider} token`, 'client', { 'cloud.provider': provider, 'switchyard.backend_auth.provider': provider, 'switchyard.backend_auth.token': token });
    if (!span) return fetch();
    return span.run(fetch).then(
      (v) => {
        span.end();
        return v;
      },
      (err: unknown) => {
        span.end(err);
        throw err;
      },
    );
  };
}
