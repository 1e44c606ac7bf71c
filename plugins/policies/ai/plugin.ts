import { definePolicy } from 'switchyard/sdk';
import { guardSlot } from '../../lib/slots/ai.ts';
import type { AiPolicyConfig } from './ai-policy.ts';
import { aiPolicySchema } from './schema.ts';

/**
 * `ai` (SPEC §2.8-2.9, BEHAVIOUR.md §2.8-2.9): the LLM request policy of an `ai` backend. It compiles prompts, route
 * types, body mutations, model aliases, prompt caching and prompt guards once and hands the runtime to the `ai` backend
 * at compile time (the `AI_POLICY` facet, plugins/lib/llm/contract.ts), which applies it to the body it owns.
 */
export default definePolicy<AiPolicyConfig>({
  key: 'ai',
  description: 'LLM request policy for `ai` backends: prompts, route types, body defaults/overrides/transformations, model aliases, prompt caching and prompt guards.',
  schema: aiPolicySchema,
  // Owns the slot of its `promptGuard` list items.
  slots: [guardSlot],
  attach: ['routePolicies', 'backendPolicies'],
  // No hook runs: the backend reads the compiled runtime. The backend's policy replaces the route's.
  phase: 'dispatch',
  order: 30,
  // `llmRequest`: the request body, in `transformations` expressions only. `llmGuards`: the prompt guards' verdicts.
  celVariables: [
    'llmRequest',
    {
      name: 'llmGuards',
      description:
        'The prompt guards that ran, in order: `llmGuards.request` and `llmGuards.response`, lists of `{guard, action}` (`action`: `pass`, `mask`, `reject`, `error`); a phase whose guards did not run is absent (ADR 0181).',
    },
  ],
  async compile(config, ctx) {
    // The implementation loads only when a config uses this policy.
    const { compileAiPolicy } = await import('./ai-policy.ts');
    return compileAiPolicy(config, ctx);
  },
});
