import { defineLlmProvider } from '../../lib/slots/ai.ts';
import schema from './schema.json' with { type: 'json' };

export interface BedrockConfig {
  model?: string;
  region: string;
}

/** `bedrock` (neutral name `vendorFive`): AWS Bedrock Converse (SPEC §2.8). */
export default defineLlmProvider<BedrockConfig>({
  key: 'bedrock',
  aliases: ['vendorFive'],
  description: 'AWS Bedrock through the Converse API (SigV4 by default); Chat Completions and Messages clients translated.',
  schema,
  async compile(config) {
    const { createBedrockProvider } = await import('./bedrock.ts');
    return createBedrockProvider(config);
  },
});
