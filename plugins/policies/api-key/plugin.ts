import { definePolicy } from 'switchyard/sdk';
import schema from './schema.json' with { type: 'json' };
import type { ApiKeyConfig } from './api-key.ts';

/** `apiKey`: static keys from `Authorization: Bearer` or `x-api-key` (SPEC 5.3, DECIDED 7). */
export default definePolicy<ApiKeyConfig>({
  key: 'apiKey',
  description: 'Authenticate callers by static API keys; the key and its metadata are exposed to CEL as `apiKey`.',
  schema,
  attach: ['routePolicies'],
  phase: 'authn',
  // Reads headers only, never `ex.req` as a stream: its routes may be served lean (ADR 0088).
  requestStream: false,
  order: 30,
  celVariables: [{ name: 'apiKey', description: 'The API key an `apiKey` policy accepted: `apiKey.key` and each top-level field of its `metadata`.' }],
  async compile(config, ctx) {
    // The implementation loads only when a config uses this policy.
    const { compileApiKey } = await import('./api-key.ts');
    return compileApiKey(config, ctx);
  },
});
