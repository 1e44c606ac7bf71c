// An LLM provider: a variant of the `llmProvider` slot that the `ai` backend owns, written only against the
// published `switchyard/slots/ai` module. Ollama (and llama.cpp's server, vLLM, LM Studio) speak OpenAI's Chat
// Completions and Embeddings under `/v1`; clients of the Anthropic Messages API are translated by the backend.
import { defineLlmProvider } from 'switchyard/slots/ai';
import type { LlmProviderInstance, LlmRouteType, LlmWireFormat } from 'switchyard/slots/ai';

/** The validated value of `ollama` under an `ai` backend's `provider`. */
export interface OllamaConfig {
  /** Where the server listens: `http://host:port`. Default `http://127.0.0.1:11434`. */
  readonly url?: string;
  /** The model every request uses, whatever the client asked for. */
  readonly model?: string;
  /** Sent as `Authorization: Bearer …` (a server behind a proxy that wants a key); otherwise no credential goes out. */
  readonly apiKey?: string;
}

const DEFAULT_URL = 'http://127.0.0.1:11434';

/** The API formats the server speaks for each client format; `undefined` answers 400 `unsupported`. */
const WIRE: Partial<Record<LlmRouteType, LlmWireFormat>> = { completions: 'completions', messages: 'completions', embeddings: 'embeddings' };

export default defineLlmProvider<OllamaConfig>({
  key: 'ollama',
  description: 'Ollama or another OpenAI-compatible server (Chat Completions and Embeddings under /v1).',
  schema: {
    type: 'object',
    additionalProperties: false,
    properties: {
      url: { type: 'string', pattern: '^https?://[^/?#]+/?$', description: 'The server: `http(s)://host[:port]`. Default `http://127.0.0.1:11434`.' },
      model: { type: 'string', minLength: 1, description: 'Model to use for every request (`llama3.2`); default: the client\'s.' },
      apiKey: { type: 'string', minLength: 1, description: 'Bearer key to send; by default the client\'s key is not passed on.' },
    },
  },
  compile(config): LlmProviderInstance {
    const origin = (config.url ?? DEFAULT_URL).replace(/\/$/, '');
    const authorization = config.apiKey === undefined ? undefined : `Bearer ${config.apiKey}`;
    return {
      kind: 'ollama',
      model: config.model,
      origin,
      wireFormat: (client) => WIRE[client],
      path: (format) => (format === 'embeddings' ? '/v1/embeddings' : '/v1/chat/completions'),
      prepareHeaders(headers) {
        // The client's OpenAI or Anthropic key is meant for the gateway, never for the local server.
        delete headers['authorization'];
        delete headers['x-api-key'];
        delete headers['anthropic-version'];
        if (authorization !== undefined) headers['authorization'] = authorization;
      },
    };
  },
});
