import { definePolicy } from 'switchyard/sdk';
import schema from './schema.json' with { type: 'json' };
import type { CorsConfig } from './cors.ts';

/**
 * `cors`: runs first (ingress), so preflights are answered before authentication and the CORS headers of an
 * allowed origin are queued onto every later response, 401/403/429 included.
 */
export default definePolicy<CorsConfig>({
  key: 'cors',
  description: 'Answer CORS preflights and add CORS headers to responses for allowed origins.',
  schema,
  attach: ['routePolicies'],
  phase: 'ingress',
  // Reads headers and attributes only, never `ex.req` as a stream: its routes may be served lean (ADR 0088).
  requestStream: false,
  order: 10,
  async compile(config, ctx) {
    // The implementation loads only when a config uses this policy.
    const { compileCors } = await import('./cors.ts');
    return compileCors(config, ctx);
  },
});
