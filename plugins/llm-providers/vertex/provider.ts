import type { LlmProviderInstance, LlmRouteType, LlmWireFormat } from '../../lib/llm/contract.ts';
import { openAiHeaders, openAiPath, openAiWire, provider } from '../../lib/llm/provider-kit.ts';
import type { VertexConfig } from './plugin.ts';

/** The Anthropic API version Vertex expects in the body of Claude requests. */
export const VERTEX_ANTHROPIC_VERSION = 'vertex-2023-10-16';

/** Claude models are served by Anthropic's publisher endpoint, in the Messages format. */
function isClaude(model: string | undefined): boolean {
  return model !== undefined && /^(anthropic\/)?claude/.test(model);
}

export function createVertexProvider(config: VertexConfig): LlmProviderInstance {
  const location = config.region ?? 'global';
  const host = location === 'global' ? 'aiplatform.googleapis.com' : `${location}-aiplatform.googleapis.com`;
  const base = `/v1/projects/${encodeURIComponent(config.projectId)}/locations/${encodeURIComponent(location)}`;
  const openAi = openAiWire(['completions', 'embeddings']);
  return provider({
    kind: 'gcp.vertex_ai',
    model: config.model,
    origin: `https://${host}`,
    wireFormat: (client: LlmRouteType, model?: string): LlmWireFormat | undefined => {
      if (isClaude(model)) return client === 'messages' || client === 'completions' ? 'messages' : undefined;
      return openAi(client);
    },
    path: (format, model, stream) => {
      if (format === 'messages') {
        const name = encodeURIComponent(model.replace(/^anthropic\//, '')).replace(/%40/g, '@'); // `claude-x@20250514`, as Google writes it
        return `${base}/publishers/anthropic/models/${name}:${stream ? 'streamRawPredict' : 'rawPredict'}`;
      }
      return openAiPath(`${base}/endpoints/openapi`, format);
    },
    prepareHeaders: openAiHeaders,
    prepareBody: (format, body) => {
      if (format === 'messages') {
        // Vertex names the model in the path and the API version in the body.
        delete body.model;
        body.anthropic_version = VERTEX_ANTHROPIC_VERSION;
        return;
      }
      // The OpenAI-compatible endpoint names models `<publisher>/<model>`.
      if (typeof body.model === 'string' && !body.model.includes('/')) body.model = `google/${body.model}`;
    },
    defaultAuth: { gcp: { type: 'accessToken' } },
  });
}
