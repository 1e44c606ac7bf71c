import { definePolicy, parseDuration } from 'switchyard/sdk';
import type { PolicyInstance } from 'switchyard/sdk';
import { deny } from './deny.ts';
import schema from './schema.json' with { type: 'json' };
import { TokenBucket } from './token-bucket.ts';
import { llmTokenLimits } from './llm-tokens.ts';

interface BucketConfig {
  maxTokens: number;
  tokensPerFill: number;
  fillInterval: string;
  type?: 'requests' | 'tokens';
}

/** `localRateLimit`: token buckets per route, one for the whole gateway whatever its number of workers; denial is 429 with rate-limit headers. */
export default definePolicy<BucketConfig[]>({
  key: 'localRateLimit',
  description: 'Limit the request rate (or, with `type: tokens`, the LLM tokens) of a route with in-process token buckets (429 when empty).',
  schema,
  attach: ['routePolicies'],
  phase: 'admission',
  // Reads headers and attributes only, never `ex.req` as a stream: its routes may be served lean (ADR 0088).
  requestStream: false,
  order: 10,
  compile(config, ctx) {
    const requestBuckets: TokenBucket[] = [];
    const tokenBuckets: TokenBucket[] = [];
    let firstTokens = -1;
    config.forEach((b, i) => {
      if (b.maxTokens < b.tokensPerFill) ctx.fail('`maxTokens` must be at least `tokensPerFill`', [i, 'maxTokens']);
      const interval = parseDuration(b.fillInterval)!;
      if (interval <= 0) ctx.fail('`fillInterval` must be greater than zero', [i, 'fillInterval']);
      const type = b.type ?? 'requests';
      if (type === 'tokens' && firstTokens === -1) firstTokens = i;
      // Keyed by route (by name, not position: ADR 0169), type and settings, so a reload that leaves this bucket
      // unchanged keeps its state.
      const key = `localRateLimit:${ctx.stateKey ?? JSON.stringify(ctx.path)}:${i}:${type}:${b.maxTokens}:${b.tokensPerFill}:${interval}`;
      (type === 'tokens' ? tokenBuckets : requestBuckets).push(ctx.resources.get(key, () => new TokenBucket(b.maxTokens, b.tokensPerFill, interval, Date.now(), (initial) => ctx.sharedCell(key, initial))));
    });
    const requests: PolicyInstance['onRequest'] = requestBuckets.length
      ? () => {
          const now = Date.now();
          // Indexed: a `for...of` iterator was allocated per request.
          for (let i = 0; i < requestBuckets.length; i++) if (!requestBuckets[i]!.tryTake(1, now)) return deny(requestBuckets[i]!, now);
          return undefined;
        }
      : undefined;
    if (tokenBuckets.length === 0) return requests ? { onRequest: requests } : {};
    return llmTokenLimits(tokenBuckets, requests, [...ctx.path, firstTokens, 'type']);
  },
});
