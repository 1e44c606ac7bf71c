import { headerModifierSchema } from '../../lib/header-modifier/header-modifier.ts';

/** The route types `routes` may name (plugins/lib/llm/contract.ts `LlmRouteType`). */
export const ROUTE_TYPES = ['completions', 'messages', 'responses', 'embeddings', 'anthropicTokenCount', 'generateContent', 'geminiCountTokens', 'realtime', 'passthrough', 'detect', 'models'] as const;

const message = {
  type: 'object',
  description: 'A message to insert: `role` and text `content`.',
  properties: {
    role: {
      enum: ['system', 'developer', 'user', 'assistant'],
      description: '`system` (or `developer`): an instruction; in Anthropic Messages bodies it goes into the top-level `system` field, in OpenAI Responses bodies into `input` as a `system`/`developer` item. `user`/`assistant`: a conversation turn.',
    },
    content: { type: 'string', description: 'The text of the message.' },
  },
  required: ['role', 'content'],
  additionalProperties: false,
};

const rejectionHeaders = headerModifierSchema('response');

const guard = {
  'x-slot': 'guard',
  description: 'One guard: exactly one guard type (`regex`, `webhook`, `openAIModeration`, `bedrockGuardrails`, `googleModelArmor`, \u2026), plus an optional `rejection`.',
  properties: {
    rejection: {
      type: 'object',
      description: 'The response sent when this guard rejects (a webhook\'s own reject status and body replace it).',
      properties: {
        status: { type: 'integer', minimum: 200, maximum: 599, description: 'HTTP status (a final one: 200-599). Default: 403.' },
        body: { type: 'string', description: 'Response body, sent as it is (no content type is added). Default: `The request was rejected due to inappropriate content`.' },
        headers: { ...rejectionHeaders, description: 'Headers of the rejection: `add`, then `set`, then `remove`.' },
      },
      additionalProperties: false,
    },
  },
};

const guardList = (what: string) => ({
  type: 'array',
  description: `Guards run on ${what}, in order: the first rejection answers; masking guards change the text and the next guard sees the masked text.`,
  items: guard,
});

const jsonMap = (what: string) => ({
  type: 'object',
  description: what,
  propertyNames: { minLength: 1 },
  additionalProperties: { description: 'Any JSON value.' },
});

/** JSON Schema of the `ai` policy (SPEC §2.8-2.9, BEHAVIOUR.md §2.8-2.9). */
export const aiPolicySchema = {
  type: 'object',
  description: 'LLM request policy for an `ai` backend: prompts, route types, body defaults/overrides/transformations, model aliases, prompt caching and prompt guards. Set on the route or the backend (the backend\'s wins as a whole).',
  properties: {
    prompts: {
      type: 'object',
      description: 'Messages inserted before (`prepend`) and after (`append`) the client\'s messages, before the prompt guards run.',
      properties: {
        prepend: { type: 'array', description: 'Inserted before the client\'s messages, in this order.', items: message },
        append: { type: 'array', description: 'Inserted after the client\'s messages, in this order.', items: message },
      },
      additionalProperties: false,
    },
    routes: {
      type: 'object',
      description: 'Request path suffix \u2192 route type. The longest matching suffix wins; `*` matches any path. Without `routes` every request is OpenAI Chat Completions.',
      propertyNames: { minLength: 1 },
      additionalProperties: {
        enum: [...ROUTE_TYPES],
        description: '`completions` (OpenAI Chat Completions), `messages` (Anthropic Messages), `responses` (OpenAI Responses), `embeddings`, `anthropicTokenCount`, `generateContent` (Gemini native: prompts go to `systemInstruction`/`contents`, generation settings such as `temperature` or `max_tokens` to `generationConfig`), `geminiCountTokens`, `realtime`, `passthrough` (forwarded as it is), `detect` (told from the body), `models` (`/v1/models`: the models the route serves, answered by the gateway).',
      },
    },
    defaults: jsonMap('Top-level request body fields set when the client did not send them (applied after `overrides` and `transformations`). On Gemini-native bodies generation settings (`temperature`, `topP`/`top_p`, `maxOutputTokens`/`max_tokens`, `stop`, \u2026) go in `generationConfig`.'),
    overrides: jsonMap('Top-level request body fields always set, replacing the client\'s (applied first). On Gemini-native bodies generation settings go in `generationConfig`.'),
    transformations: {
      type: 'object',
      description: 'Top-level request body field \u2192 CEL expression computing its value, evaluated per request against the client\'s body (`llmRequest`) and the request (`request`, `jwt`, \u2026). A failing expression removes the field. Applied after `overrides`, before `defaults`.',
      propertyNames: { minLength: 1 },
      additionalProperties: { type: 'string', minLength: 1, 'x-secret': 'cel', description: 'A CEL expression, such as `llmRequest.max_tokens > 1024 ? 1024 : llmRequest.max_tokens`.' },
    },
    modelAliases: {
      type: 'object',
      description: 'Requested model \u2192 model sent. Keys may contain `*` wildcards; an exact key wins, then the longest matching pattern.',
      propertyNames: { minLength: 1 },
      additionalProperties: { type: 'string', minLength: 1, description: 'The model name to use instead.' },
    },
    virtualModels: {
      type: 'object',
      description: 'Model names clients may send that the gateway maps to this route\'s `ai` backends (docs/llm.md "Virtual models"): a request naming one goes only to its targets, in the order of its `strategy`, failing over to the next target on a refused connection, a timeout, 429 or 5xx. `/v1/models` lists the names. Route level only.',
      propertyNames: { minLength: 1 },
      additionalProperties: {
        type: 'object',
        description: 'One virtual model: how its targets are ordered and the targets.',
        properties: {
          strategy: {
            enum: ['ordered', 'weighted'],
            description: '`ordered` (default): the first target in rotation serves, the next ones are the failover, in config order. `weighted`: targets are drawn by `weight` (the first draw serves, the later ones are the failover); weight-0 targets come last, as failover only.',
          },
          targets: {
            type: 'array',
            minItems: 1,
            description: 'The backends that serve this model.',
            items: {
              type: 'object',
              description: 'One target: an `ai` backend of the route and the model it serves.',
              properties: {
                backend: { type: 'string', minLength: 1, description: 'The `ai` backend, by its `name` (or a named backend by the name the route refers to it by).' },
                model: { type: 'string', minLength: 1, description: 'The model sent to that backend in place of the virtual name. Default: the backend\'s `provider.<x>.model` (one of the two is required).' },
                weight: { type: 'number', minimum: 0, description: 'Share of requests under `strategy: weighted` (relative to the others). Default: 1; 0: failover only.' },
                when: { type: 'string', minLength: 1, 'x-secret': 'cel', description: 'CEL condition; the target takes part only when it is true (an error counts as false). Sees `request`, `jwt`, `apiKey`, \u2026, `llmRequest` (the client\'s body) and `llm.requestModel`, `llm.promptTokens` (an estimate).' },
              },
              required: ['backend'],
              additionalProperties: false,
            },
          },
        },
        required: ['targets'],
        additionalProperties: false,
      },
    },
    promptCaching: {
      type: ['object', 'null'],
      description: 'Add Anthropic `cache_control` breakpoints to Messages requests (at most four per request, the client\'s own included). `null` or absent: off.',
      properties: {
        cacheSystem: { type: 'boolean', description: 'Mark the system prompt (when it is at least `minTokens` long). Default: true.' },
        cacheMessages: { type: 'boolean', description: 'Mark the conversation history (the second-to-last message, moved back by `cacheMessageOffset`). Default: true.' },
        cacheTools: { type: 'boolean', description: 'Mark the last tool definition. Default: false.' },
        minTokens: { type: 'integer', minimum: 0, description: 'Smallest estimated system prompt size (words × 1.3) worth a breakpoint. Default: 1024.' },
        cacheMessageOffset: { type: 'integer', minimum: 0, description: 'How many messages further back than the second-to-last the history breakpoint goes. Default: 0.' },
      },
      additionalProperties: false,
    },
    promptGuard: {
      type: 'object',
      description: 'Guards on prompts (`request`) and on model responses (`response`; streamed ones only with `streaming: Enabled`).',
      properties: {
        request: guardList('the request\'s messages (after `prompts`), before the request is translated for the provider'),
        response: guardList('the model\'s output in a complete response, in the client\'s format (streamed responses too with `streaming: Enabled`)'),
        streaming: {
          enum: ['Disabled', 'Enabled'],
          description: '`Disabled` (default): streamed responses are sent as they arrive, without response guards. `Enabled`: a streamed response is held until it ends, the response guards run on the complete response, and only then is it sent (unchanged, masked, or replaced by the rejection); the client gets nothing before the model has finished.',
        },
      },
      additionalProperties: false,
    },
  },
  additionalProperties: false,
};
