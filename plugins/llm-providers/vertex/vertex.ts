import type { LlmProviderInstance, LlmRouteType, LlmWireFormat } from '../../lib/llm/contract.ts';
import { geminiNativePath } from '../../lib/llm/gemini/paths.ts';
import { signaturesToCompatibleCalls } from '../../lib/llm/gemini/request.ts';
import { GOOGLE_QUERY_KEY, googleApiKeyHeader, googleTokenOnly, isGeminiNative, openAiHeaders, openAiPath, openAiWire, provider } from '../../lib/llm/provider-kit.ts';
import type { LlmHeaders } from '../../lib/llm/provider-kit.ts';
import type { VertexConfig } from './plugin.ts';

/** The Anthropic API version Vertex expects in the body of Claude requests. */
export const VERTEX_ANTHROPIC_VERSION = 'vertex-2023-10-16';

/** Claude models are served by Anthropic's publisher endpoint, in the Messages format. */
function isClaude(model: string | undefined): boolean {
  return model !== undefined && /^(anthropic\/)?claude/.test(model);
}

/** Gemini models are served by Google's publisher endpoint, in Gemini's native format. */
function isGemini(model: string | undefined): boolean {
  return model !== undefined && /^(google\/|models\/)?gemini/.test(model);
}

/** A model Google's publisher endpoint can name: no publisher, or `google/`. */
function isGooglePublished(model: string | undefined): boolean {
  return model !== undefined && (!model.includes('/') || /^(google|models)\//.test(model));
}

function vertexHeaders(h: LlmHeaders, format?: LlmWireFormat): void {
  // Claude's publisher endpoint enables beta features by Anthropic's header, as Anthropic's API does.
  const beta = format === 'messages' || format === 'anthropicTokenCount' ? h['anthropic-beta'] : undefined;
  openAiHeaders(h);
  if (beta !== undefined) h['anthropic-beta'] = beta;
  if (isGeminiNative(format)) googleApiKeyHeader(h);
  else googleTokenOnly(h);
}

export function createVertexProvider(config: VertexConfig): LlmProviderInstance {
  const location = config.region ?? 'global';
  // The `us` and `eu` multi-regions are served on regional-endpoint (`rep`) hosts, as Google's SDKs reach them.
  const host = location === 'global' ? 'aiplatform.googleapis.com' : location === 'us' || location === 'eu' ? `aiplatform.${location}.rep.googleapis.com` : `${location}-aiplatform.googleapis.com`;
  const base = `/v1/projects/${encodeURIComponent(config.projectId)}/locations/${encodeURIComponent(location)}`;
  const openAi = openAiWire(['completions', 'embeddings']);
  const compatible = config.openAICompatible === true;
  return provider({
    kind: 'gcp.vertex_ai',
    model: config.model,
    origin: `https://${host}`,
    // BEHAVIOUR.md §4.6: Anthropic models => Messages, Gemini models => native, else the OpenAI-compatible endpoint.
    wireFormat: (client: LlmRouteType, model?: string): LlmWireFormat | undefined => {
      const chat = client === 'completions' || client === 'messages' || client === 'responses';
      if (isClaude(model)) return chat ? 'messages' : client === 'anthropicTokenCount' ? 'anthropicTokenCount' : undefined;
      if (client === 'generateContent') return isGooglePublished(model) ? 'geminiNative' : undefined;
      if (client === 'geminiCountTokens') return isGooglePublished(model) ? 'geminiCountTokens' : undefined;
      if (client === 'anthropicTokenCount') return isGemini(model) ? 'geminiCountTokens' : undefined;
      if (chat && isGemini(model) && !compatible) return 'geminiNative';
      return openAi(client);
    },
    path: (format, model, stream) => {
      // One endpoint counts for every Claude model, named in the body.
      if (format === 'anthropicTokenCount') return `${base}/publishers/anthropic/models/count-tokens:rawPredict`;
      if (format === 'messages') {
        const name = encodeURIComponent(model.replace(/^anthropic\//, '')).replace(/%40/g, '@'); // `claude-x@20250514`, as Google writes it
        return `${base}/publishers/anthropic/models/${name}:${stream ? 'streamRawPredict' : 'rawPredict'}`;
      }
      if (isGeminiNative(format)) return geminiNativePath(`${base}/publishers/google`, format, model, stream);
      return openAiPath(`${base}/endpoints/openapi`, format);
    },
    prepareHeaders: vertexHeaders,
    queryKey: GOOGLE_QUERY_KEY,
    // A passthrough request keys as the API its path names: Claude's publisher endpoint keeps `anthropic-beta`, the
    // OpenAI-compatible endpoint takes only tokens, the rest is Gemini's native API (an express-mode `AIza` key).
    passthroughFormat: (path) => (path.includes('/publishers/anthropic/') ? 'messages' : path.includes('/endpoints/openapi/') ? 'completions' : 'geminiNative'),
    prepareBody: (format, body) => {
      if (format === 'anthropicTokenCount') {
        if (typeof body.model === 'string') body.model = body.model.replace(/^anthropic\//, '');
        body.anthropic_version = VERTEX_ANTHROPIC_VERSION;
        return;
      }
      if (format === 'messages') {
        // Vertex names the model in the path and the API version in the body.
        delete body.model;
        body.anthropic_version = VERTEX_ANTHROPIC_VERSION;
        return;
      }
      if (isGeminiNative(format)) {
        delete body.model;
        // Vertex's countTokens takes contents, system instruction and tools at the top (the Gemini API's
        // `generateContentRequest` form, as an Anthropic client's count is translated, is not its).
        const inner = body.generateContentRequest;
        if (format === 'geminiCountTokens' && inner !== null && typeof inner === 'object') {
          delete body.generateContentRequest;
          const { model: _model, ...fields } = inner as Record<string, unknown>;
          Object.assign(body, fields);
        }
        return;
      }
      // The OpenAI-compatible endpoint names models `<publisher>/<model>`.
      if (typeof body.model === 'string' && !body.model.includes('/')) body.model = `google/${body.model}`;
      // It keeps a Gemini turn's thought signature on its first call (ADR 0180); other publishers' models sign nothing.
      if (format === 'completions' && isGemini(typeof body.model === 'string' ? body.model : undefined)) signaturesToCompatibleCalls(body);
    },
    defaultAuth: { gcp: { type: 'accessToken' } },
  });
}
