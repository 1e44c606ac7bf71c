import { definePolicy, jsonErrorReply, parseDuration } from 'switchyard/sdk';
import schema from './schema.json' with { type: 'json' };
import { TokenBucket } from './token-bucket.ts';

interface BucketConfig {
  maxTokens: number;
  tokensPerFill: number;
  fillInterval: string;
  type?: 'requests' | 'tokens';
}

/** `localRateLimit`: in-process token buckets per route; denial is 429 with rate-limit headers. */
export default definePolicy<BucketConfig[]>({
  key: 'localRateLimit',
  description: 'Limit the request rate of a route with in-process token buckets (429 when empty).',
  schema,
  attach: ['routePolicies'],
  phase: 'admission',
  order: 10,
  compile(config, ctx) {
    const buckets: TokenBucket[] = [];
    config.forEach((b, i) => {
      if (b.maxTokens < b.tokensPerFill) ctx.fail('`maxTokens` must be at least `tokensPerFill`', [i, 'maxTokens']);
      const interval = parseDuration(b.fillInterval)!;
      if (interval <= 0) ctx.fail('`fillInterval` must be greater than zero', [i, 'fillInterval']);
      // Token-type buckets count LLM usage; on other routes they do not limit requests.
      if ((b.type ?? 'requests') !== 'requests') return;
      // Keyed by place and settings, so a reload that leaves this bucket unchanged keeps its state.
      const key = `localRateLimit:${JSON.stringify(ctx.path)}:${i}:${b.maxTokens}:${b.tokensPerFill}:${interval}`;
      buckets.push(ctx.resources.get(key, () => new TokenBucket(b.maxTokens, b.tokensPerFill, interval)));
    });
    if (buckets.length === 0) return {};
    return {
      onRequest() {
        const now = Date.now();
        for (const bucket of buckets) {
          if (!bucket.tryTake(1, now)) {
            const reset = String(bucket.resetSeconds(now));
            return jsonErrorReply(429, 'rate_limited', 'rate limit exceeded', {
              'x-ratelimit-limit': String(bucket.max),
              'x-ratelimit-remaining': '0',
              'x-ratelimit-reset': reset,
              'retry-after': reset,
            });
          }
        }
        return undefined;
      },
    };
  },
});
