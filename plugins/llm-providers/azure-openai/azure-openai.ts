import type { LlmProviderInstance } from '../../lib/llm/contract.ts';
import { bearerToken, openAiHeaders, openAiPath, openAiWire, provider } from '../../lib/llm/provider-kit.ts';
import type { LlmHeaders } from '../../lib/llm/provider-kit.ts';
import type { AzureOpenAiConfig } from './plugin.ts';

/** A JWT (an Entra ID access token) rather than an API key. */
const JWT = /^eyJ[\w-]*\.[\w-]+\.[\w-]*$/;

/**
 * Azure's key header: a Bearer API key becomes `api-key`; Entra tokens stay Bearer, the only credential (per attempt
 * the Bearer credential is the one `backendAuth` set, and a client's `api-key` beside it would be the one used).
 */
function azureHeaders(h: LlmHeaders): void {
  openAiHeaders(h);
  const token = bearerToken(h);
  if (token === undefined) return;
  if (JWT.test(token)) {
    delete h['api-key'];
    return;
  }
  h['api-key'] = token;
  delete h.authorization;
}

export function createAzureOpenAiProvider(config: AzureOpenAiConfig): LlmProviderInstance {
  const host = config.host.replace(/^https?:\/\//, '').replace(/\/$/, '');
  const scheme = config.host.startsWith('http://') ? 'http' : 'https';
  const version = config.apiVersion ?? 'v1';
  const v1 = version === 'v1' || version === 'preview';
  const query = version === 'v1' ? '' : `?api-version=${encodeURIComponent(version)}`;
  return provider({
    kind: 'azure.openai',
    model: config.model,
    origin: `${scheme}://${host}`,
    wireFormat: openAiWire(['completions', 'responses', 'embeddings']),
    path: (format, model) => {
      if (v1) return `${openAiPath('/openai/v1', format)}${query}`;
      // Dated versions before 2025-03-01-preview have no Responses API (a 404); the v1 API (GA, no api-version) has
      // it for every resource, the deployment named by the body's model: Responses always go there (ADR 0157).
      if (format === 'responses') return '/openai/v1/responses';
      const deployment = encodeURIComponent(model);
      return `/openai/deployments/${deployment}/${format === 'embeddings' ? 'embeddings' : 'chat/completions'}${query}`;
    },
    prepareHeaders: azureHeaders,
    // Browsers' Realtime WebSockets may send the key as `?api-key=`.
    queryKey: { param: 'api-key', header: 'api-key' },
  });
}
