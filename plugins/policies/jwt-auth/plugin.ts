import { definePolicy } from 'switchyard/sdk';
import { jwtAuthSchema } from './schema.ts';
import type { JwtAuthConfig } from './jwt-auth.ts';

/** `jwtAuth`: validates bearer JWTs (SPEC 5.2); claims become the `jwt` attribute, the header is removed. */
export default definePolicy<JwtAuthConfig>({
  key: 'jwtAuth',
  description: 'Validate bearer JWTs against JWKS keys; claims are exposed to CEL as `jwt.<claim>`.',
  schema: jwtAuthSchema,
  attach: ['routePolicies'],
  phase: 'authn',
  // Reads headers and attributes only, never `ex.req` as a stream: its routes may be served lean (ADR 0088).
  requestStream: false,
  order: 10,
  celVariables: [{ name: 'jwt', description: 'Claims of the JWT a `jwtAuth` (or `mcpAuthentication`) policy accepted: `jwt.sub`, `jwt.iss`, any custom claim.' }],
  async compile(config, ctx) {
    // jose loads only when a config uses this policy.
    const { compileJwtAuth } = await import('./jwt-auth.ts');
    return compileJwtAuth(config, ctx);
  },
});
