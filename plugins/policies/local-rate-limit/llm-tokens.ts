// `type: tokens` buckets (BEHAVIOUR.md §8.1, docs/llm.md "Token rate limits", ADR 0024): they count the LLM tokens
// the route's `ai` backend reports, through the SDK's `llmTokenLimiters` and `llmCall` attributes.
import { addLlmTokenLimiter, defineAttribute, llmCall, llmSettlement } from 'switchyard/sdk';
import type { ConfigPath, Exchange, LlmTokenLimiter, LlmTokenUsage, PolicyInstance, Reply } from 'switchyard/sdk';
import { deny } from './deny.ts';
import type { TokenBucket } from './token-bucket.ts';

/** What one request took from each token bucket before the call; its real usage is settled against it. */
class Reservation implements LlmTokenLimiter {
  private readonly buckets: readonly TokenBucket[];
  private readonly taken: number[];
  private reserved = false;

  constructor(buckets: readonly TokenBucket[]) {
    this.buckets = buckets;
    this.taken = buckets.map(() => 0);
  }

  /** The prompt estimate, taken now so concurrent requests see it; never below zero. Never refuses: that was `onRequest`'s. */
  reserve(_ex: Exchange, estimate: number): undefined {
    // A failover to another backend calls again (ADR 0039): the first reservation stands.
    if (this.reserved) return undefined;
    this.reserved = true;
    const now = Date.now();
    for (let i = 0; i < this.buckets.length; i++) this.taken[i] = this.buckets[i]!.drain(estimate, now);
    return undefined;
  }

  /**
   * A realtime session's response (ADR 0190): its tokens taken from every bucket; the session ends once one is empty,
   * as a new request would be refused.
   */
  charge(_ex: Exchange, usage: LlmTokenUsage): Reply | undefined {
    const used = (usage.inputTokens ?? 0) + (usage.outputTokens ?? 0);
    const now = Date.now();
    for (const bucket of this.buckets) bucket.drain(used, now);
    for (const bucket of this.buckets) if (bucket.remaining(now) < 1) return deny(bucket, now);
    return undefined;
  }

  /** After the answer: charge what the usage exceeds the reservation by, or give back what it fell short of. */
  settle(used: number): void {
    const now = Date.now();
    for (let i = 0; i < this.buckets.length; i++) {
      const delta = used - this.taken[i]!;
      if (delta > 0) this.buckets[i]!.drain(delta, now);
      else if (delta < 0) this.buckets[i]!.refund(-delta, now);
    }
  }
}

const RESERVATION = defineAttribute<Reservation>('localRateLimit.reservation');

/** The bucket with the fewest tokens left: its numbers are the rate-limit headers of an allowed answer. */
function mostConstrained(buckets: readonly TokenBucket[], now: number): TokenBucket {
  let best = buckets[0]!;
  for (let i = 1; i < buckets.length; i++) if (buckets[i]!.remaining(now) < best.remaining(now)) best = buckets[i]!;
  return best;
}

/**
 * The policy instance of a `localRateLimit` with token buckets (and maybe request buckets, checked first): a request
 * passes while every token bucket holds at least one token; the backend then reserves the prompt estimate, and
 * `onLog` (after the answer has ended, streams included) charges the real input + output tokens.
 */
export function llmTokenLimits(buckets: readonly TokenBucket[], requests: PolicyInstance['onRequest'], typePath: ConfigPath): PolicyInstance {
  return {
    onRequest(ex): Reply | undefined {
      if (requests) {
        const denied = requests(ex) as Reply | undefined;
        if (denied) return denied;
      }
      const now = Date.now();
      for (const bucket of buckets) if (bucket.remaining(now) < 1) return deny(bucket, now);
      const reservation = new Reservation(buckets);
      ex.set(RESERVATION, reservation);
      addLlmTokenLimiter(ex, reservation);
      return undefined;
    },
    onResponse(ex, reply) {
      // Headers leave before a response's usage is known: they count the reservation, not the answer.
      if (!ex.get(RESERVATION) || reply.headers['x-ratelimit-limit'] !== undefined) return;
      const now = Date.now();
      const b = mostConstrained(buckets, now);
      reply.headers['x-ratelimit-limit'] = String(b.max);
      reply.headers['x-ratelimit-remaining'] = String(b.remaining(now));
      reply.headers['x-ratelimit-reset'] = String(b.resetSeconds(now));
    },
    onLog(ex, status) {
      const reservation = ex.get(RESERVATION);
      if (!reservation) return;
      const call = ex.get(llmCall);
      const settlement = llmSettlement(call, status);
      // An answer without usage keeps its estimate; a failed call gives it back (ADR 0116).
      if (settlement === 'estimate') return;
      reservation.settle(settlement === 'usage' ? (call!.usage.inputTokens ?? 0) + (call!.usage.outputTokens ?? 0) : 0);
    },
    requiresBackendProtocol: {
      protocol: 'llm',
      message:
        '`type: tokens` counts LLM tokens, which only an `ai` backend reports, and this route has another backend (or none): use `type: requests` here, or put the limit on a route whose backends are `ai` backends',
      path: typePath,
    },
  };
}
