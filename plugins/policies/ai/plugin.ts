import { definePolicy } from 'switchyard/sdk';
import type { AiPolicyConfig } from './ai-policy.ts';
import { aiPolicySchema } from './schema.ts';

/**
 * `ai` (SPEC §2.8–2.9, BEHAVIOUR.md §2.8–2.9): the LLM request policy of an `ai` backend. It compiles prompts, route
 * types, body mutations, model aliases, prompt caching and prompt guards once; per request it only publishes the
 * runtime (`AI_POLICY`, plugins/lib/llm/contract.ts), which the `ai` backend applies to the body it owns.
 */
export default definePolicy<AiPolicyConfig>({
  key: 'ai',
  description: 'LLM request policy for `ai` backends: prompts, route types, body defaults/overrides/transformations, model aliases, prompt caching and prompt guards.',
  schema: aiPolicySchema,
  attach: ['routePolicies', 'backendPolicies'],
  // Publishes what the backend applies, like the other dispatch-phase policies; after requestMirror (10), so a
  // mirror never depends on it. The backend's policy runs after the route's and replaces it.
  phase: 'dispatch',
  order: 30,
  // `llmRequest`: the request body, in `transformations` expressions only.
  celVariables: ['llmRequest'],
  async compile(config, ctx) {
    // The implementation loads only when a config uses this policy.
    const { compileAiPolicy } = await import('./ai-policy.ts');
    return compileAiPolicy(config, ctx);
  },
});
