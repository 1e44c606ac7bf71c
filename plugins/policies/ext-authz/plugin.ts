import { definePolicy } from 'switchyard/sdk';
import type { ExtAuthzConfig } from './ext-authz.ts';
import schema from './schema.json' with { type: 'json' };

/** `extAuthz`: ask an external service (Envoy ext_authz gRPC, or plain HTTP) whether the request may proceed. */
export default definePolicy<ExtAuthzConfig>({
  key: 'extAuthz',
  description: 'Delegate authorization to an external service over Envoy ext_authz gRPC or HTTP; its denial goes back to the client.',
  schema,
  attach: ['routePolicies', 'backendPolicies'],
  phase: 'authz',
  // Reads headers, path, method and of `ex.req` only `socket` and `httpVersion` (gRPC's attributes), never the body
  // nor `ex.req` as a stream: its routes may be served lean (ADR 0088, 0095).
  requestStream: false,
  // Before `authorization` (20), as in the reference gateway.
  order: 10,
  async compile(config, ctx) {
    // @grpc/grpc-js and the proto loader load only when a config uses this policy.
    const { compileExtAuthz } = await import('./ext-authz.ts');
    return compileExtAuthz(config, ctx);
  },
});
