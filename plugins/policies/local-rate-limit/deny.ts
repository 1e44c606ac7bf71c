import { jsonErrorReply } from 'switchyard/sdk';
import type { Reply } from 'switchyard/sdk';
import type { TokenBucket } from './token-bucket.ts';

/** DECIDED 10: 429 with the refusing bucket's limit, nothing remaining, when it refills, and `Retry-After`. */
export function deny(bucket: TokenBucket, now: number): Reply {
  const reset = String(bucket.resetSeconds(now));
  return jsonErrorReply(429, 'rate_limited', 'rate limit exceeded', {
    'x-ratelimit-limit': String(bucket.max),
    'x-ratelimit-remaining': '0',
    'x-ratelimit-reset': reset,
    'retry-after': reset,
  });
}
