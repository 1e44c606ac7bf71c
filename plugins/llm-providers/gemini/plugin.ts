import { defineLlmProvider } from 'switchyard/sdk';
import type { LlmProviderInstance } from '../../lib/llm/contract.ts';
import schema from './schema.json' with { type: 'json' };

export interface GeminiConfig {
  model?: string;
}

/** `gemini` (neutral name `vendorTwo`): Google Gemini through its OpenAI-compatible API (SPEC §2.8). */
export default defineLlmProvider<GeminiConfig, LlmProviderInstance>({
  key: 'gemini',
  aliases: ['vendorTwo'],
  description: 'Google Gemini (AI Studio) through its OpenAI-compatible API; Anthropic Messages clients translated.',
  schema,
  async compile(config) {
    const { createGeminiProvider } = await import('./provider.ts');
    return createGeminiProvider(config);
  },
});
