import { defineBackend } from 'switchyard/sdk';
import { llmProviderSlot } from '../../lib/slots/ai.ts';
import { backendAuthSlot } from '../../lib/slots/backend-auth.ts';
import type { AiBackendConfig } from './backend.ts';
import { llmDeadlineSection } from './deadline.ts';
import schema from './schema.json' with { type: 'json' };

/** `ai`: an LLM provider (SPEC §2.8; BEHAVIOUR.md §2.8, §4.6; docs/llm.md). */
export default defineBackend<AiBackendConfig>({
  key: 'ai',
  description: 'Serve LLM clients from one provider (OpenAI, Anthropic, Gemini, Vertex, Bedrock, Azure OpenAI), translating API formats.',
  schema,
  // `provider` is a one-of of `llmProvider`; a provider's default credential (`defaultAuth`) is a `backendAuth` variant.
  slots: [llmProviderSlot, backendAuthSlot],
  // A top-level named backend (`backends: [{ name, ai: {...} }]`), used from routes as `backend: <name>`.
  named: true,
  // `config.defaultTimeouts.llmBackendRequestTimeout`: the provider's default response deadline.
  configSections: [llmDeadlineSection],
  // `llm`: the call (provider, models, token counts, cost), for expressions evaluated after the answer (access log).
  celVariables: [
    {
      name: 'llm',
      description:
        'The LLM call of an `ai` backend: `llm.provider`, `llm.requestModel`, `llm.inputTokens`, `llm.outputTokens`, `llm.cost`, \u2026 (known once the answer arrived).',
    },
  ],
  async compile(config, ctx) {
    const { compileAiBackend } = await import('./backend.ts');
    return compileAiBackend(config, ctx);
  },
});
