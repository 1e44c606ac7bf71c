/** `max-age`, then `s-maxage` (RFC 9111 5.2.2.1, 5.2.2.10), of a `Cache-Control` value. */
const MAX_AGE = /(?:^|,)\s*max-age\s*=\s*"?(\d+)"?/i;
const S_MAXAGE = /(?:^|,)\s*s-maxage\s*=\s*"?(\d+)"?/i;
const NO_CACHE = /(?:^|,)\s*no-(?:cache|store)\b/i;

/** How long a fetched resource may be kept before it is fetched again. */
export interface CacheBounds {
  /** Without a `max-age`. */
  readonly defaultMs: number;
  /** `max-age` is clamped to [minMs, maxMs]; `no-cache` / `no-store` mean `minMs`. */
  readonly minMs: number;
  readonly maxMs: number;
}

/**
 * The time to keep a remote resource (a JWKS, an OpenAPI document) given its response's `Cache-Control`: its
 * `max-age` (else its `s-maxage`) clamped to the bounds (the floor stops a server that says `max-age=0` from being
 * asked in a loop). The gateway is the resource's client, so `max-age` wins over `s-maxage` when both are given.
 */
export function cacheTtlMs(cacheControl: string | undefined, bounds: CacheBounds): number {
  if (!cacheControl) return bounds.defaultMs;
  if (NO_CACHE.test(cacheControl)) return bounds.minMs;
  const m = MAX_AGE.exec(cacheControl) ?? S_MAXAGE.exec(cacheControl);
  if (!m) return bounds.defaultMs;
  return Math.min(bounds.maxMs, Math.max(bounds.minMs, Number(m[1]) * 1000));
}
