import { defineLlmProvider } from '../../lib/slots/ai.ts';
import schema from './schema.json' with { type: 'json' };

export interface AnthropicConfig {
  model?: string;
}

/** `anthropic` (neutral name `vendorThree`): the Anthropic Messages API (SPEC §2.8). */
export default defineLlmProvider<AnthropicConfig>({
  key: 'anthropic',
  aliases: ['vendorThree'],
  description: 'Anthropic: Messages and count_tokens natively; OpenAI Chat Completions clients translated.',
  schema,
  async compile(config) {
    const { createAnthropicProvider } = await import('./anthropic.ts');
    return createAnthropicProvider(config);
  },
});
