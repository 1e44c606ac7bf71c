import type { LlmProviderInstance } from '../../lib/llm/contract.ts';
import { openAiHeaders, openAiPath, openAiWire, provider } from '../../lib/llm/provider-kit.ts';
import type { OpenAiConfig } from './plugin.ts';

export const OPENAI_ORIGIN = 'https://api.openai.com';

export function createOpenAiProvider(config: OpenAiConfig): LlmProviderInstance {
  return provider({
    kind: 'openai',
    model: config.model,
    origin: OPENAI_ORIGIN,
    wireFormat: openAiWire(['completions', 'responses', 'embeddings']),
    path: (format) => openAiPath('/v1', format),
    prepareHeaders: openAiHeaders,
  });
}
