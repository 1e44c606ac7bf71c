import type { LlmProviderInstance, LlmRouteType, LlmWireFormat } from '../../lib/llm/contract.ts';
import { provider, stripBrowserHeaders } from '../../lib/llm/provider-kit.ts';
import type { LlmHeaders } from '../../lib/llm/provider-kit.ts';
import { converseFormat } from './converse.ts';
import { anthropicBetas, countTokensFormat, countTokensModel, isAnthropicModel, withCountBetas } from './count-tokens.ts';
import type { BedrockConfig } from './plugin.ts';

function wireFormat(client: LlmRouteType): LlmWireFormat | undefined {
  if (client === 'anthropicTokenCount') return countTokensFormat.name;
  return client === 'completions' || client === 'messages' || client === 'responses' ? 'converse' : undefined;
}

/**
 * Bedrock's credential is a SigV4 signature or a Bedrock API key, both in `Authorization`: other SDKs' key headers
 * are not sent to AWS (removed before signing, so the signature covers what is sent).
 */
function bedrockHeaders(h: LlmHeaders): void {
  stripBrowserHeaders(h);
  delete h['x-api-key'];
  delete h['api-key'];
  delete h['x-goog-api-key'];
  delete h['anthropic-version'];
  delete h['anthropic-beta'];
}

export function createBedrockProvider(config: BedrockConfig): LlmProviderInstance {
  return provider({
    kind: 'aws.bedrock',
    model: config.model,
    origin: `https://bedrock-runtime.${config.region}.amazonaws.com`,
    wireFormat,
    formats: [converseFormat, countTokensFormat],
    // Model ids carry `:` and ARNs `/`: one encoded path segment.
    path: (format, model, stream) => {
      if (format === countTokensFormat.name) return `/model/${encodeURIComponent(countTokensModel(model))}/count-tokens`;
      return `/model/${encodeURIComponent(model)}/${stream ? 'converse-stream' : 'converse'}`;
    },
    prepareHeaders: bedrockHeaders,
    // An Anthropic client's betas (its `anthropic-beta` header, which Bedrock does not read) go in the body, for
    // Claude models only: Converse refuses model fields another model does not take.
    prepareBody: (format, body, request) => {
      const betas = request !== undefined && isAnthropicModel(request.model) ? anthropicBetas(request.headers['anthropic-beta']) : [];
      if (betas.length === 0) return;
      if (format === countTokensFormat.name) return withCountBetas(body, betas);
      const fields = body.additionalModelRequestFields;
      body.additionalModelRequestFields = { ...(fields !== null && typeof fields === 'object' ? fields : {}), anthropic_beta: betas };
    },
    defaultAuth: { aws: { serviceName: 'bedrock', region: config.region } },
  });
}
