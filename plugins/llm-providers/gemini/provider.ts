import type { LlmProviderInstance } from '../../lib/llm/contract.ts';
import { openAiHeaders, openAiPath, openAiWire, provider } from '../../lib/llm/provider-kit.ts';
import type { LlmHeaders } from '../../lib/llm/provider-kit.ts';
import type { GeminiConfig } from './plugin.ts';

/** The compatibility API takes the key as a Bearer token; a native-style `x-goog-api-key` is moved there. */
function geminiHeaders(h: LlmHeaders): void {
  openAiHeaders(h);
  const key = h['x-goog-api-key'];
  if (key !== undefined) {
    if (h.authorization === undefined) h.authorization = `Bearer ${Array.isArray(key) ? key[0] : key}`;
    delete h['x-goog-api-key'];
  }
}

export function createGeminiProvider(config: GeminiConfig): LlmProviderInstance {
  return provider({
    kind: 'gcp.gemini',
    model: config.model,
    origin: 'https://generativelanguage.googleapis.com',
    wireFormat: openAiWire(['completions', 'embeddings']),
    path: (format) => openAiPath('/v1beta/openai', format),
    prepareHeaders: geminiHeaders,
  });
}
