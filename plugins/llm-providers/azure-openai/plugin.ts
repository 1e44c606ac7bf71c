import { defineLlmProvider } from '../../lib/slots/ai.ts';
import schema from './schema.json' with { type: 'json' };

export interface AzureOpenAiConfig {
  model?: string;
  host: string;
  apiVersion?: string;
}

/** `azureOpenAI` (neutral name `vendorSix`): Azure OpenAI on one resource (SPEC §2.8). */
export default defineLlmProvider<AzureOpenAiConfig>({
  key: 'azureOpenAI',
  aliases: ['vendorSix'],
  description: 'Azure OpenAI: Chat Completions, Responses and Embeddings on one resource; Anthropic Messages clients translated.',
  schema,
  async compile(config) {
    const { createAzureOpenAiProvider } = await import('./azure-openai.ts');
    return createAzureOpenAiProvider(config);
  },
});
