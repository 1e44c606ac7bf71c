import { defineLlmProvider } from '../../lib/slots/ai.ts';
import schema from './schema.json' with { type: 'json' };

export interface GeminiConfig {
  model?: string;
  /** Send Chat Completions (and translated Messages) requests to the OpenAI-compatible API instead of `generateContent`. */
  openAICompatible?: boolean;
}

/** `gemini` (neutral name `vendorTwo`): Google Gemini (AI Studio) through its native API (SPEC §2.8). */
export default defineLlmProvider<GeminiConfig>({
  key: 'gemini',
  aliases: ['vendorTwo'],
  description: 'Google Gemini (AI Studio) through its native generateContent API (or its OpenAI-compatible API); OpenAI and Anthropic clients translated.',
  schema,
  async compile(config) {
    const { createGeminiProvider } = await import('./gemini.ts');
    return createGeminiProvider(config);
  },
});
