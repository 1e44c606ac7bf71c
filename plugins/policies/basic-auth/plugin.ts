import { definePolicy } from 'switchyard/sdk';
import schema from './schema.json' with { type: 'json' };
import type { BasicAuthConfig } from './basic-auth.ts';

/** `basicAuth`: HTTP Basic against an htpasswd file (SPEC 5.4); `basicAuth.username` in CEL. */
export default definePolicy<BasicAuthConfig>({
  key: 'basicAuth',
  description: 'HTTP Basic authentication against an htpasswd file; the user is exposed to CEL as `basicAuth.username`.',
  schema,
  attach: ['routePolicies'],
  phase: 'authn',
  // Reads the Authorization header only, never `ex.req` as a stream: its routes may be served lean (ADR 0088).
  requestStream: false,
  order: 20,
  celVariables: [{ name: 'basicAuth', description: 'The user a `basicAuth` policy accepted: `basicAuth.username`.' }],
  async compile(config, ctx) {
    // bcryptjs and the apache-* hashers load only when a config uses this policy.
    const { compileBasicAuth } = await import('./basic-auth.ts');
    return compileBasicAuth(config, ctx);
  },
});
