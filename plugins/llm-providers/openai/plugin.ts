import { defineLlmProvider } from '../../lib/slots/ai.ts';
import schema from './schema.json' with { type: 'json' };

export interface OpenAiConfig {
  model?: string;
}

/** `openAI` (neutral name `vendorOne`): the OpenAI API (SPEC §2.8). */
export default defineLlmProvider<OpenAiConfig>({
  key: 'openAI',
  aliases: ['vendorOne'],
  description: 'OpenAI: Chat Completions, Responses and Embeddings natively; Anthropic Messages clients translated.',
  schema,
  async compile(config) {
    const { createOpenAiProvider } = await import('./openai.ts');
    return createOpenAiProvider(config);
  },
});
