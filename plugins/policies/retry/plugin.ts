import { definePolicy, parseDuration } from 'switchyard/sdk';
import schema from './schema.json' with { type: 'json' };

interface RetryConfig {
  attempts?: number;
  codes: number[];
  backoff?: string;
}

/**
 * `retry`: the kernel's forwarder carries it out (body replayed from a 64 KiB buffer, chunked ones included; larger
 * bodies are not retried; each retry carries `x-retry-attempt`). BEHAVIOUR.md DECIDED 9: `attempts` counts
 * retries. Retries to the same backend are bounded by a retry budget (ADR 0125).
 */
export default definePolicy<RetryConfig>({
  key: 'retry',
  description: 'Retry upstream attempts on listed statuses, connection failures and backend timeouts.',
  schema,
  attach: ['routePolicies', 'backendPolicies'],
  phase: 'dispatch',
  order: 60,
  compile(config) {
    return {
      facets: {
        retry: {
          attempts: config.attempts ?? 1,
          codes: config.codes,
          backoffMs: config.backoff !== undefined ? parseDuration(config.backoff) : undefined,
        },
      },
    };
  },
});
