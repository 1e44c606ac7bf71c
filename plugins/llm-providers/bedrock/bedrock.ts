import type { LlmProviderInstance, LlmRouteType, LlmWireFormat } from '../../lib/llm/contract.ts';
import { provider, stripBrowserHeaders } from '../../lib/llm/provider-kit.ts';
import type { LlmHeaders } from '../../lib/llm/provider-kit.ts';
import { converseFormat } from './converse.ts';
import { countTokensFormat, countTokensModel } from './count-tokens.ts';
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
    defaultAuth: { aws: { serviceName: 'bedrock', region: config.region } },
  });
}
