import type { LlmProviderInstance, LlmRouteType, LlmWireFormat } from '../../lib/llm/contract.ts';
import { bearerToken, provider, stripBrowserHeaders } from '../../lib/llm/provider-kit.ts';
import type { LlmHeaders } from '../../lib/llm/provider-kit.ts';
import type { AnthropicConfig } from './plugin.ts';

export const ANTHROPIC_VERSION = '2023-06-01';
/** Anthropic OAuth access tokens go in `Authorization`; API keys in `x-api-key`. */
const OAUTH_PREFIX = 'sk-ant-oat';

function wireFormat(client: LlmRouteType): LlmWireFormat | undefined {
  if (client === 'messages' || client === 'completions' || client === 'responses') return 'messages';
  if (client === 'anthropicTokenCount') return 'anthropicTokenCount';
  return undefined;
}

/** Anthropic's header conventions (also used by Vertex for Claude models). */
export function anthropicHeaders(h: LlmHeaders, moveKey = true): void {
  stripBrowserHeaders(h);
  if (h['anthropic-version'] === undefined) h['anthropic-version'] = ANTHROPIC_VERSION;
  if (!moveKey) return;
  const token = bearerToken(h);
  if (token !== undefined && !token.startsWith(OAUTH_PREFIX)) {
    h['x-api-key'] = token;
    delete h.authorization;
  }
}

export function createAnthropicProvider(config: AnthropicConfig): LlmProviderInstance {
  return provider({
    kind: 'anthropic',
    model: config.model,
    origin: 'https://api.anthropic.com',
    wireFormat,
    path: (format) => (format === 'anthropicTokenCount' ? '/v1/messages/count_tokens' : '/v1/messages'),
    prepareHeaders: (h) => anthropicHeaders(h),
  });
}
