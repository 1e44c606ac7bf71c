import { defineLlmProvider } from '../../lib/slots/ai.ts';
import schema from './schema.json' with { type: 'json' };

export interface VertexConfig {
  model?: string;
  region?: string;
  projectId: string;
  /** Send Chat Completions requests for Gemini models to the OpenAI-compatible endpoint instead of `generateContent`. */
  openAICompatible?: boolean;
}

/** `vertex` (neutral name `vendorFour`): Google Vertex AI (SPEC §2.8). */
export default defineLlmProvider<VertexConfig>({
  key: 'vertex',
  aliases: ['vendorFour'],
  description: 'Google Vertex AI: Gemini models natively (generateContent), Claude models in the Messages format, others through the OpenAI-compatible endpoint; a Google access token by default.',
  schema,
  async compile(config) {
    const { createVertexProvider } = await import('./vertex.ts');
    return createVertexProvider(config);
  },
});
