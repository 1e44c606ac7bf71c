import { defineLlmProvider } from 'switchyard/sdk';
import type { LlmProviderInstance } from '../../lib/llm/contract.ts';
import schema from './schema.json' with { type: 'json' };

export interface VertexConfig {
  model?: string;
  region?: string;
  projectId: string;
}

/** `vertex` (neutral name `vendorFour`): Google Vertex AI (SPEC §2.8). */
export default defineLlmProvider<VertexConfig, LlmProviderInstance>({
  key: 'vertex',
  aliases: ['vendorFour'],
  description: 'Google Vertex AI through its OpenAI-compatible endpoint, with a Google access token by default.',
  schema,
  async compile(config) {
    const { createVertexProvider } = await import('./provider.ts');
    return createVertexProvider(config);
  },
});
