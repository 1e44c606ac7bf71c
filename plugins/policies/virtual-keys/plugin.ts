import { definePolicy } from 'switchyard/sdk';
import schema from './schema.json' with { type: 'json' };
import type { VirtualKeysConfig } from './config.ts';

/** `virtualKeys`: issued keys with budgets, reserved before each LLM call and settled after it (docs/llm-economics.md, ADR 0035). */
export default definePolicy<VirtualKeysConfig>({
  key: 'virtualKeys',
  description: 'Authenticate callers by gateway-issued virtual keys with owners, teams, allowed models and routes, and budgets (USD, tokens, requests per period) reserved before each LLM call.',
  schema,
  attach: ['routePolicies'],
  phase: 'authn',
  // After apiKey (30): a route may take either.
  order: 35,
  celVariables: [{ name: 'key', description: 'The virtual key a `virtualKeys` policy accepted (never its secret): `key.id`, `key.name`, `key.owner`, `key.team`, `key.models`, `key.metadata.<field>`.' }],
  async compile(config, ctx) {
    // The implementation (and its store client) loads only when a config uses this policy.
    const { compileVirtualKeys } = await import('./virtual-keys.ts');
    return compileVirtualKeys(config, ctx);
  },
});
