import type { LlmProviderInstance, LlmRouteType, LlmWireFormat } from '../../lib/llm/contract.ts';
import { geminiNativePath } from '../../lib/llm/gemini/paths.ts';
import { signaturesToCompatibleCalls } from '../../lib/llm/gemini/request.ts';
import { GOOGLE_QUERY_KEY, googleApiKeyHeader, isGeminiNative, keyHeaderToBearer, openAiHeaders, openAiPath, provider } from '../../lib/llm/provider-kit.ts';
import type { LlmHeaders } from '../../lib/llm/provider-kit.ts';
import type { GeminiConfig } from './plugin.ts';

/**
 * Key conventions: native endpoints take an API key in `x-goog-api-key` (an `AIza...` Bearer key is moved there);
 * the OpenAI-compatible API takes it as a Bearer token (a native-style `x-goog-api-key` is moved there). Passthrough
 * requests follow the API their path names (`passthroughFormat`).
 */
function geminiHeaders(h: LlmHeaders, format?: LlmWireFormat): void {
  openAiHeaders(h);
  if (isGeminiNative(format)) return googleApiKeyHeader(h);
  if (format !== undefined) keyHeaderToBearer(h, 'x-goog-api-key');
}

/**
 * The wire format for a client format (BEHAVIOUR.md §4.6: "Completions -> Gemini-native" first): Chat Completions
 * and (translated) Messages clients go to the native `generateContent` API unless `openAICompatible` is set;
 * Gemini's own clients go there natively; embeddings use the OpenAI-compatible API.
 */
export function geminiWire(openAICompatible: boolean): (client: LlmRouteType) => LlmWireFormat | undefined {
  return (client) => {
    switch (client) {
      case 'completions':
      case 'messages':
      case 'responses':
        return openAICompatible ? 'completions' : 'geminiNative';
      case 'generateContent':
        return 'geminiNative';
      case 'geminiCountTokens':
      case 'anthropicTokenCount':
        return 'geminiCountTokens';
      case 'embeddings':
        return 'embeddings';
      default:
        return undefined;
    }
  };
}

export function createGeminiProvider(config: GeminiConfig): LlmProviderInstance {
  return provider({
    kind: 'gcp.gemini',
    model: config.model,
    origin: 'https://generativelanguage.googleapis.com',
    wireFormat: geminiWire(config.openAICompatible === true),
    path: (format, model, stream) => (isGeminiNative(format) ? geminiNativePath('/v1beta', format, model, stream) : openAiPath('/v1beta/openai', format)),
    prepareHeaders: geminiHeaders,
    queryKey: GOOGLE_QUERY_KEY,
    // Everything but the OpenAI-compatible API (`/v1beta/openai/...`) is the native API, keyed by `x-goog-api-key`.
    passthroughFormat: (path) => (path.includes('/openai/') ? 'completions' : 'geminiNative'),
    prepareBody: (format, body) => {
      // The native API names the model in the path.
      if (isGeminiNative(format)) delete body.model;
      // The OpenAI-compatible API keeps a turn's thought signature on its first call (ADR 0180).
      else if (format === 'completions') signaturesToCompatibleCalls(body);
    },
  });
}
