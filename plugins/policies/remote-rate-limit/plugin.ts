import { definePolicy } from 'switchyard/sdk';
import type { RemoteRateLimitConfig } from './remote-rate-limit.ts';
import schema from './schema.json' with { type: 'json' };

/** `remoteRateLimit`: Envoy RLS v3 `ShouldRateLimit` per request; 429 with rate-limit headers when over the limit. */
export default definePolicy<RemoteRateLimitConfig>({
  key: 'remoteRateLimit',
  description: 'Limit requests with an external Envoy-compatible rate limit service (shared state); 429 when over the limit.',
  schema,
  attach: ['routePolicies'],
  phase: 'admission',
  // After localRateLimit (10): the in-process bucket is cheaper and answers first.
  // Reads headers and attributes (CEL descriptors) only, never `ex.req` as a stream: its routes may be served lean
  // (ADR 0088, 0095).
  requestStream: false,
  order: 20,
  async compile(config, ctx) {
    // @grpc/grpc-js and the proto loader load only when a config uses this policy.
    const { compileRemoteRateLimit } = await import('./remote-rate-limit.ts');
    return compileRemoteRateLimit(config, ctx);
  },
});
