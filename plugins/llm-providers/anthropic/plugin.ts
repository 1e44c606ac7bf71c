import { defineLlmProvider } from 'switchyard/sdk';
import type { LlmProviderInstance } from '../../lib/llm/contract.ts';
import schema from './schema.json' with { type: 'json' };

export interface AnthropicConfig {
  model?: string;
}

/** `anthropic` (neutral name `vendorThree`): the Anthropic Messages API (SPEC §2.8). */
export default defineLlmProvider<AnthropicConfig, LlmProviderInstance>({
  key: 'anthropic',
  aliases: ['vendorThree'],
  description: 'Anthropic: Messages and count_tokens natively; OpenAI Chat Completions clients translated.',
  schema,
  async compile(config) {
    const { createAnthropicProvider } = await import('./provider.ts');
    return createAnthropicProvider(config);
  },
});
