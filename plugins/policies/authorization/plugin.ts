import { definePolicy } from 'switchyard/sdk';
import schema from './schema.json' with { type: 'json' };
import type { AuthorizationConfig } from './authorization.ts';

/** `authorization`: CEL allow/deny/require rules decided per request (BEHAVIOUR.md §5.5, DECIDED 3); 403 on deny. */
export default definePolicy<AuthorizationConfig>({
  key: 'authorization',
  description: 'Allow or deny requests with CEL rules (source address ranges, headers, JWT claims, API key metadata); 403 when denied.',
  schema,
  attach: ['routePolicies', 'backendPolicies'],
  phase: 'authz',
  // Reads headers and attributes only, never `ex.req` as a stream: its routes may be served lean (ADR 0088).
  requestStream: false,
  // After extAuthz (10): the external decision comes first, as in the reference gateway.
  order: 20,
  async compile(config, ctx) {
    // The implementation loads only when a config uses this policy.
    const { compileAuthorization } = await import('./authorization.ts');
    return compileAuthorization(config, ctx);
  },
});
