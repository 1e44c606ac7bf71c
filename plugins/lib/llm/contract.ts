import { defineAttribute, defineFacet } from 'switchyard/sdk';
import type { Exchange, Reply, UpstreamTls } from 'switchyard/sdk';
import type { LlmFormat } from './formats/format.ts';

/**
 * The contracts between the `ai` backend (plugins/backends/ai), its `llmProvider` variants (plugins/llm-providers)
 * and the `ai` policy with its prompt guards (plugins/policies/ai, plugins/guards). SPEC §2.8-2.9, BEHAVIOUR.md
 * §2.8, §2.9, §4.6.
 */

/**
 * What a request on an `ai` backend is (the `ai.routes` route types of BEHAVIOUR §2.8). `completions` = OpenAI Chat
 * Completions, `messages` = Anthropic Messages, `responses` = OpenAI Responses, `anthropicTokenCount` = Anthropic
 * `count_tokens`, `passthrough` = forwarded untouched to the provider, `detect` = the format told from the body,
 * `models` = the models the route serves (`/v1/models`). `generateContent` = Gemini's native `models/<m>:generateContent` (`:streamGenerateContent` streams;
 * the model is taken from the path), `geminiCountTokens` = Gemini's `models/<m>:countTokens`.
 */
export type LlmRouteType =
  | 'completions'
  | 'messages'
  | 'responses'
  | 'embeddings'
  | 'anthropicTokenCount'
  | 'realtime'
  | 'passthrough'
  | 'detect'
  | 'models'
  | 'generateContent'
  | 'geminiCountTokens';

/**
 * An API format a provider speaks natively on the wire. `geminiNative` = Gemini `generateContent` /
 * `streamGenerateContent?alt=sse`, `geminiCountTokens` = Gemini `countTokens`.
 */
export type LlmWireFormat =
  | 'completions'
  | 'messages'
  | 'responses'
  | 'embeddings'
  | 'anthropicTokenCount'
  | 'converse'
  | 'geminiNative'
  | 'geminiCountTokens'
  // A provider's own format, carried by its instance (`LlmProviderInstance.formats`).
  | (string & {});

/** What an `llmProvider` variant (`openAI`, `anthropic`, `gemini`, `vertex`, `bedrock`, `azureOpenAI`) compiles to. */
export interface LlmProviderInstance {
  /** The provider's canonical key, for logs (`llm.provider`). */
  readonly kind: string;
  /** `provider.<x>.model`: replaces the client's `model` when set. */
  readonly model: string | undefined;
  /** Default upstream origin (`https://api.openai.com`); `ai.hostOverride` replaces it. */
  readonly origin: string;
  /** TLS for the default origin (system roots when undefined). */
  readonly tls?: UpstreamTls;
  /**
   * The wire format this provider uses for a client format, or undefined when it cannot serve it (the backend then
   * answers 400 `unsupported`). For example anthropic: completions -> messages (translated), messages -> messages.
   * `model` (optional, the model the request will use) lets a provider pick by model (vertex: Claude models speak
   * Anthropic Messages).
   */
  wireFormat(client: LlmRouteType, model?: string): LlmWireFormat | undefined;
  /** The upstream path for a wire format (`ai.pathOverride` replaces it). */
  path(format: LlmWireFormat, model: string, stream: boolean): string;
  /**
   * Provider header conventions on the upstream request: version headers, the API key header, stripped browser
   * headers. `format` (optional) is the wire format the request is sent in, undefined for passthrough and WebSocket
   * upgrades (gemini: an `AIza...` Bearer key goes to `x-goog-api-key` on native endpoints only).
   */
  prepareHeaders(headers: Record<string, string | string[] | undefined>, format?: LlmWireFormat): void;
  /**
   * Optional: the wire format a `passthrough` (or WebSocket) request's path is in, so its header conventions are
   * the translated routes' (gemini: `x-goog-api-key` on native paths, a Bearer key under `/openai/`); undefined
   * when the path says nothing. Without it passthrough requests get the conventions of no format.
   */
  passthroughFormat?(path: string): LlmWireFormat | undefined;
  /**
   * Optional: the query parameter a client may send its key in (Google's `key`, Azure's `api-key`) and the header it
   * belongs in. On passthrough and WebSocket requests it is moved there before the header conventions run.
   */
  readonly queryKey?: { readonly param: string; readonly header: string };
  /**
   * Optional: provider conventions on the wire-format body, after translation and the model override, just before
   * it is serialized (vertex: `google/` in front of a bare model name). `request` (optional to read; the `ai`
   * backend always passes it) is the model sent and the client's request headers before `prepareHeaders` (bedrock:
   * an Anthropic client's `anthropic-beta` becomes Claude's `anthropic_beta` body member).
   */
  prepareBody?(format: LlmWireFormat, body: Record<string, unknown>, request?: LlmBodyRequest): void;
  /**
   * Optional: wire formats of the provider's own API (Bedrock: Converse), found by the name `wireFormat` returns
   * before the built-in ones (plugins/lib/llm/formats). A provider with a new API brings its format here: translation
   * to and from the canonical form, usage, stream events (ADR 0032).
   */
  readonly formats?: readonly LlmFormat[];
  /**
   * The provider's default credential when no `backendAuth` applies (bedrock: implicit AWS SigV4; vertex: GCP access
   * token), as a `backendAuth` variant value to compile, e.g. `{ aws: { serviceName: 'bedrock', region } }`.
   */
  readonly defaultAuth?: Record<string, unknown>;
}

/** What `prepareBody` is told of the request beside its body. */
export interface LlmBodyRequest {
  readonly model: string;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
}

/** One message as prompt guards see it (text content flattened). */
export interface GuardMessage {
  role: string;
  content: string;
  /**
   * True when this text continues the message before it: the next text part of the same content list, which the
   * model reads as one text with it (a pattern split across parts is still one text). Absent otherwise.
   */
  joined?: boolean;
  /**
   * True when the text is JSON (tool-call arguments, a function response): a masking guard must answer JSON of the
   * same kind (an object stays an object), else it failed. The `regex` guard masks inside its strings (ADR 0165).
   */
  json?: boolean;
}

/**
 * The compiled `ai` policy, handed to the `ai` backend at compile time through the `AI_POLICY` facet (route or
 * backend level; the backend's wins) and applied by the backend per request, which owns the body: routing, prompt changes and guards happen on the
 * client-format body before translation (guards also on the translated-back response).
 */
export interface AiPolicyRuntime {
  /** The route type for a request path from `ai.routes` (suffix match, longest first, `*` fallback), else undefined. */
  routeType(path: string): LlmRouteType | undefined;
  /**
   * Optional: on a `models` route, the id of the one model a path asks for (`<models suffix>/<id>`, the SDKs'
   * `models.retrieve`), else undefined (the list).
   */
  modelAsked?(path: string): string | undefined;
  /**
   * Apply `prompts` (prepend/append; `system` entries into Anthropic's `system` field), `overrides`,
   * `transformations`, `defaults` and `modelAliases` to a parsed client body, in place.
   */
  applyRequest(ex: Exchange, format: LlmRouteType, body: Record<string, unknown>): void;
  /** Run `promptGuard.request` guards on the body (masking guards change it in place); a Reply when one rejects. */
  guardRequest(ex: Exchange, format: LlmRouteType, body: Record<string, unknown>): Promise<Reply | undefined>;
  /** Run `promptGuard.response` guards on a complete (non-streamed) response body in the client's format. */
  guardResponse(ex: Exchange, format: LlmRouteType, body: Record<string, unknown>): Promise<Reply | undefined>;
  /**
   * Optional: the `modelAliases` keys that name one model (no `*`), in config order: the `models` route lists them
   * with the configured models.
   */
  readonly modelAliasNames?: readonly string[];
  /** Optional: the `virtualModels` names, in config order: the `models` route lists them too. */
  readonly virtualModelNames?: readonly string[];
  /** True when response guards exist (the backend then buffers non-streamed responses to run them). */
  readonly hasResponseGuards: boolean;
  /**
   * Optional: `promptGuard.streaming: Enabled`. When true (and `hasResponseGuards`), the backend holds a streamed
   * response until it ends, puts it together into the complete response in the client's format, runs
   * `guardResponse` on that and only then sends the stream (unchanged, masked, or replaced by the rejection).
   * Absent or false: streams are not guarded.
   */
  readonly guardStreams?: boolean;
  // A guard that cannot decide (its service failed, fail-closed) makes guardRequest/guardResponse resolve to the 503
  // reply `failed to process LLM request: prompt guard failed`; they do not reject.
  /**
   * Optional: `ai.promptCaching` with defaults applied, when set. `applyRequest` already marks Anthropic Messages
   * client bodies; a backend that translates another format into Anthropic Messages may call
   * `applyAnthropicCacheMarkers(body, promptCaching)` (plugins/lib/llm-guard/prompt-caching.ts) on the translated body.
   */
  readonly promptCaching?: {
    readonly cacheSystem: boolean;
    readonly cacheMessages: boolean;
    readonly cacheTools: boolean;
    readonly minTokens: number;
    readonly cacheMessageOffset: number;
  };
}

/** Provided by the `ai` policy (`provides`), read by the `ai` backend's compile (`ctx.policies.facet(AI_POLICY)`). */
export const AI_POLICY = defineFacet<AiPolicyRuntime>('ai.policy');

/**
 * The virtual model a request named (`ai.virtualModels`), set by the `ai` policy's backend selector before a backend
 * is picked: the name the client used and the model each chosen backend serves it with (keyed by the backend's
 * compiled instance: a named backend goes by another name than its `ai.name`).
 */
export interface VirtualModelChoice {
  readonly name: string;
  readonly models: ReadonlyMap<object, string>;
}
export const LLM_VIRTUAL_MODEL = defineAttribute<VirtualModelChoice>('llm.virtualModel');

/**
 * `ctx.loadState` key of the `ai` backends compiled in this load: instance -> the model its provider fixes (null: the
 * client's `model` is sent). The `ai` policy reads it when it resolves its virtual models' targets.
 */
export const AI_BACKEND_MODELS = 'ai.backendModels';
export type AiBackendModels = Map<object, string | null>;

/** The client's API format, set by the `ai` backend once it knows it; shapes the gateway's errors from then on. */
export const LLM_CLIENT_FORMAT = defineAttribute<LlmRouteType>('llm.clientFormat');

/**
 * What a prompt guard variant (`regex`, `webhook`, `moderationGuard`/`openAIModeration`, `guardrailsGuard`/
 * `bedrockGuardrails`, `modelArmorGuard`/`googleModelArmor`) compiles to.
 */
export interface GuardInstance {
  /**
   * Inspect the messages of a request (`phase: 'request'`) or the assistant output of a response. Return `pass`,
   * `mask` with replacement messages (same length and order), or `reject` (optionally with the guard service's own
   * status and body, which then replace the entry's `rejection`). Throw when the guard service fails. `images`: the
   * images of a request (`seesImages` guards only, ADR 0181), each an `https:`/`http:` URL or a `data:` URL, in
   * document order; images are read, never masked. `messages` may be empty when a request has images only.
   */
  check(ex: Exchange, phase: 'request' | 'response', messages: readonly GuardMessage[], images?: readonly string[]): Promise<GuardVerdict> | GuardVerdict;
  /** True when the guard's service judges images: the request's images are collected and passed to `check`. */
  readonly seesImages?: boolean;
  dispose?(): void;
}

export type GuardVerdict =
  | { readonly action: 'pass' }
  | { readonly action: 'mask'; readonly messages: readonly GuardMessage[] }
  | { readonly action: 'reject'; readonly status?: number; readonly body?: string; readonly reason?: string };
