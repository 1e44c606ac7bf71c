import { celValueToString } from 'switchyard/sdk';
import type { CompiledExpression, Exchange } from 'switchyard/sdk';
import type { HeaderValueMessage } from '../../lib/envoy-grpc/envoy-grpc.ts';

/** `RateLimitResponse.Code`. */
export const Code = { UNKNOWN: 0, OK: 1, OVER_LIMIT: 2 } as const;

/** `RateLimitResponse.RateLimit.Unit` -> seconds. */
const UNIT_SECONDS: Readonly<Record<number, number>> = { 1: 1, 2: 60, 3: 3600, 4: 86_400, 5: 30 * 86_400, 6: 365 * 86_400 };

export interface DescriptorStatus {
  code: number;
  current_limit: { requests_per_unit: number; unit: number; name?: string } | null;
  limit_remaining: number;
  duration_until_reset: { seconds: string | number; nanos: number } | null;
}

/** `RateLimitResponse` as decoded by the loader (enums as numbers, unset messages null). */
export interface RateLimitResponse {
  overall_code: number;
  statuses: DescriptorStatus[];
  response_headers_to_add: HeaderValueMessage[];
  request_headers_to_add: HeaderValueMessage[];
  raw_body: Uint8Array;
}

export interface CompiledDescriptor {
  readonly entries: readonly { readonly key: string; readonly value: CompiledExpression }[];
}

export interface DescriptorMessage {
  entries: { key: string; value: string }[];
  /** `google.protobuf.UInt64Value`: when set (0 included), this descriptor's hits instead of the request's. */
  hits_addend?: { value: number };
}

/**
 * Evaluate the descriptors of one request (BEHAVIOUR.md §8.2), with the CEL variables `extra` if given: an entry
 * that fails, is null or is empty drops its whole descriptor.
 */
export function buildDescriptors(descriptors: readonly CompiledDescriptor[], ex: Exchange, extra?: Record<string, unknown>): DescriptorMessage[] {
  const out: DescriptorMessage[] = [];
  outer: for (const d of descriptors) {
    const entries: { key: string; value: string }[] = [];
    for (const entry of d.entries) {
      let value: unknown;
      try {
        value = entry.value.evaluate(ex, extra);
      } catch {
        continue outer;
      }
      if (value === null || value === undefined) continue outer;
      const text = celValueToString(value);
      if (text === '') continue outer;
      entries.push({ key: entry.key, value: text });
    }
    out.push({ entries });
  }
  return out;
}

/** The status that limits the most: the over-limit ones first, then the fewest remaining, then the longest wait. */
export function mostConstrained(statuses: readonly DescriptorStatus[], overLimit: boolean): DescriptorStatus | undefined {
  let best: DescriptorStatus | undefined;
  let bestReset = -1;
  const now = Date.now();
  for (const s of statuses) {
    if (!s.current_limit) continue;
    if (overLimit && s.code !== Code.OVER_LIMIT && statuses.some((o) => o.code === Code.OVER_LIMIT && o.current_limit)) continue;
    const reset = resetSeconds(s, now);
    if (!best || s.limit_remaining < best.limit_remaining || (s.limit_remaining === best.limit_remaining && reset > bestReset)) {
      best = s;
      bestReset = reset;
    }
  }
  return best;
}

/** Seconds until the status's window resets: from the service, else the end of the current window of its unit. */
export function resetSeconds(s: DescriptorStatus, now = Date.now()): number {
  const d = s.duration_until_reset;
  if (d) {
    const total = Number(d.seconds) + (d.nanos ?? 0) / 1e9;
    if (total > 0) return Math.ceil(total);
  }
  const unit = s.current_limit ? UNIT_SECONDS[s.current_limit.unit] : undefined;
  if (!unit) return 0;
  const elapsed = Math.floor(now / 1000) % unit;
  return unit - elapsed;
}

/**
 * DECIDED 10 headers derived from the most constrained descriptor, for the names the service did not send itself.
 * `Retry-After` only on a denial, and at least 1 there (ADR 0169).
 */
export function derivedHeaders(res: RateLimitResponse, overLimit: boolean, sent: ReadonlySet<string>): [string, string][] {
  const s = mostConstrained(res.statuses, overLimit);
  if (!s) return [];
  // A refused client is never told to retry at once: a limit with no reset time and no known unit waits a second.
  const reset = String(overLimit ? Math.max(1, resetSeconds(s)) : resetSeconds(s));
  const out: [string, string][] = [
    ['x-ratelimit-limit', String(s.current_limit!.requests_per_unit)],
    ['x-ratelimit-remaining', String(s.limit_remaining)],
    ['x-ratelimit-reset', reset],
  ];
  if (overLimit) out.push(['retry-after', reset]);
  return out.filter(([name]) => !sent.has(name));
}

