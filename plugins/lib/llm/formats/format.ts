// The contract of one LLM API format (ADR 0032): everything the gateway knows about a format lives in the module
// that implements it. The client API families are plugins/lib/llm/formats/{completions,messages,responses,gemini}.ts;
// a provider's own wire format lives in the provider's folder (Bedrock Converse: plugins/llm-providers/bedrock) and
// reaches the `ai` backend through `LlmProviderInstance.formats`, so a provider with a new API is one folder.
import type { LlmEvent, StreamTranslator } from '../events.ts';
import type { Obj } from '../json.ts';
import type { LlmUsage } from '../usage.ts';
import type { Builder } from './assembly.ts';
import type { TextSlot } from './slots.ts';

/** A configured prompt message (`ai.prompts`). */
export interface PromptMessage {
  readonly role: string;
  readonly content: string;
}

/**
 * Where the `ai` policy's configured top-level fields (`defaults`, `overrides`, `transformations`) live in a
 * format's body. Formats without one take the field names as written, at the body's top level.
 */
export interface BodyFields {
  /** Whether the client sent the field (`defaults` fill only fields not sent). */
  has(body: Obj, field: string): boolean;
  set(body: Obj, field: string, value: unknown): void;
  delete(body: Obj, field: string): void;
}

/** The `observedMembers` of the formats whose answers carry `model` and `usage` (Chat, Messages, Responses). */
export const MODEL_AND_USAGE: readonly string[] = Object.freeze(['model', 'usage']);

/** The `observeResponse` of a format whose answers carry `model` and `usage` ({@link MODEL_AND_USAGE}). */
export function observeModelAndUsage(usageOf: (u: unknown) => LlmUsage | undefined): (body: Obj, call: UsageSink) => void {
  return (body, call) => {
    call.setResponseModel(body.model);
    call.addUsage(usageOf(body.usage));
  };
}

/** The error shape of a format's API (what its SDKs parse). */
export type ErrorFamily = 'openai' | 'anthropic' | 'google' | 'aws' | 'other';

/** Where usage and the answering model go (the `ai` backend's `LlmCall`). */
export interface UsageSink {
  readonly responseModel: string | undefined;
  setResponseModel(model: unknown): void;
  addUsage(usage: LlmUsage | undefined): void;
  /** The provider reported an error in its stream (its error object): the call failed, however the stream ends. */
  streamError?(error: unknown): void;
}

/**
 * Where a recorded span's outcome goes (`gen_ai.response.id`, `gen_ai.response.finish_reasons`): read only when the
 * call's span records (ADR 0180).
 */
export interface OutcomeSink {
  setResponseId(id: unknown): void;
  /** One choice's (candidate's) reason, as the provider names it. */
  addFinishReason(reason: unknown): void;
}

/** Each item's finish reason under `key` (choices, candidates): those not yet known (null in a stream) skipped. */
export function finishReasonsOf(items: unknown, key: string, sink: OutcomeSink): void {
  if (!Array.isArray(items)) return;
  for (const item of items) if (item !== null && typeof item === 'object') sink.addFinishReason((item as Obj)[key]);
}

/**
 * One API format. Every member but `name`, `family` and `operation` is optional: a format without translation is
 * only served to clients of the same format (passthrough of the body), one without `requestSlots` has no guarded text.
 *
 * Translation goes through one canonical form, OpenAI Chat Completions (`completions`): a client format A reaches a
 * wire format B as A.requestToCanonical then B.requestFromCanonical, and the answer comes back as
 * B.responseToCanonical then A.responseFromCanonical (streams the same way, event by event). A format equal to the
 * canonical one needs none of the four.
 */
export interface LlmFormat {
  /** The route type or wire-format name (`completions`, `messages`, `converse`, ...). */
  readonly name: string;
  /** The error shape of its API. */
  readonly family: ErrorFamily;
  /** OTel `gen_ai.operation.name` of a call in this format (`chat`, `embeddings`, `generate_content`, `count_tokens`). */
  readonly operation: string;

  /** Request body -> canonical (Chat Completions) request. */
  requestToCanonical?(body: Obj): Obj;
  /** Canonical request -> this format's request. */
  requestFromCanonical?(body: Obj): Obj;
  /** This format's complete response -> canonical response (`model`: the request's, for formats without one). */
  responseToCanonical?(body: Obj, model: string): Obj;
  /** Canonical response -> this format's response. */
  responseFromCanonical?(body: Obj, model: string): Obj;
  /** Stream events of this format -> canonical chunks. */
  streamToCanonical?(model: string): StreamTranslator;
  /** Canonical chunks -> stream events of this format. */
  streamFromCanonical?(model: string): StreamTranslator;

  /** Usage and model of a complete answer in this format. */
  observeResponse?(body: Obj, call: UsageSink): void;
  /**
   * The top-level members of a complete answer that `observeResponse` reads: of an answer passed through untouched
   * only these are picked out of its bytes and parsed (ADR 0060). Absent: the answer is parsed whole.
   */
  readonly observedMembers?: readonly string[];
  /** Usage and model carried by one stream event. */
  observeEvent?(e: LlmEvent, call: UsageSink): void;
  /** The id and finish reasons of a complete answer (a recorded span only). */
  outcomeOfResponse?(body: Obj, sink: OutcomeSink): void;
  /** The top-level members `outcomeOfResponse` reads, picked beside `observedMembers` from a passed-through answer. */
  readonly outcomeMembers?: readonly string[];
  /** The id and finish reasons one stream event carries (a recorded span parses every event). */
  outcomeOfEvent?(e: LlmEvent, sink: OutcomeSink): void;
  /**
   * Optional pre-filter of a passed-through SSE stream: false for an event (its `event:` name and raw data) that
   * `observeEvent` would ignore, so it is not parsed. Absent: every event is parsed.
   */
  observes?(event: string | undefined, data: string, call: UsageSink): boolean;
  /**
   * The answer's output (text, tool-call arguments, reasoning) one stream event carries, in UTF-8 bytes, read from its
   * raw data (output-bytes.ts): what a stream cut before its usage is charged is estimated from it (ADR 0150, 0157).
   */
  outputBytes?(data: string): number;
  /** One event as SSE text, as this format's clients expect it. */
  serializeEvent?(e: LlmEvent): string;
  /**
   * A complete answer as this format's stream events, for a client that asked for a stream when the provider sent a
   * whole body (formats/answer-events.ts). Absent: such a body reaches the client as it came.
   */
  answerEvents?(body: Obj): LlmEvent[];
  /** Put a held stream's events together into the complete response (response guards on streams). */
  readonly assembleStream?: Builder;

  /** The text prompt guards see in a request (pushed in document order). */
  requestSlots?(body: Obj, out: TextSlot[]): void;
  /** The text prompt guards see in a complete response. */
  responseSlots?(body: Obj, out: TextSlot[]): void;
  /** Where configured body fields go (absent: the body's top level, names as written). */
  readonly bodyFields?: BodyFields;
  /** Insert configured prompts (`ai.prompts.prepend`/`append`). */
  insertPrompts?(body: Obj, prepend: readonly PromptMessage[], append: readonly PromptMessage[]): void;
  /**
   * Optional, on a wire format: translations from client formats that have no canonical form (token counts), by the
   * client format's name, used instead of the canonical route (Bedrock's CountTokens serves Anthropic `count_tokens`
   * so). Such requests are never streamed.
   */
  readonly from?: Readonly<Record<string, DirectTranslation>>;
}

/** A request and its whole answer translated from one client format straight to a wire format (`LlmFormat.from`). */
export interface DirectTranslation {
  request(body: Obj): Obj;
  response(body: Obj, model: string): Obj;
}
