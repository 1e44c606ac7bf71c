import { defineBackend } from 'switchyard/sdk';
import type { AiBackendConfig } from './backend.ts';
import schema from './schema.json' with { type: 'json' };

/** `ai`: an LLM provider (SPEC §2.8; BEHAVIOUR.md §2.8, §4.6; docs/llm.md). */
export default defineBackend<AiBackendConfig>({
  key: 'ai',
  description: 'Serve LLM clients from one provider (OpenAI, Anthropic, Gemini, Vertex, Bedrock, Azure OpenAI), translating API formats.',
  schema,
  // A top-level named backend (`backends: [{ name, ai: {…} }]`), used from routes as `backend: <name>`.
  named: true,
  // `llm`: the call (provider, models, token counts, cost), for expressions evaluated after the answer (access log).
  celVariables: ['llm'],
  async compile(config, ctx) {
    const { compileAiBackend } = await import('./backend.ts');
    return compileAiBackend(config, ctx);
  },
});
