// What each metered realtime API sends, as the meter reads it (ADR 0190, 0192): OpenAI's and Azure's Realtime, Gemini
// and Vertex Live, and a Live client's `setup`.
import { isObj } from '../../lib/llm/json.ts';
import type { Obj } from '../../lib/llm/json.ts';
import type { LlmCall } from '../../lib/llm/telemetry.ts';
import type { LlmUsage } from '../../lib/llm/usage.ts';
import { usageFromGemini, usageFromResponses } from '../../lib/llm/usage.ts';
import { MAX_MODEL_NAME } from './request-parts.ts';

/** A realtime `response.done` usage: Responses' counts, the details named `input_token_details` (and the Responses name). */
function realtimeUsage(u: unknown): LlmUsage | undefined {
  if (!isObj(u)) return undefined;
  return usageFromResponses({ ...u, input_tokens_details: u.input_token_details ?? u.input_tokens_details, output_tokens_details: u.output_token_details ?? u.output_tokens_details });
}

/**
 * What a session's API sends, as the meter reads it: which messages are parsed (those containing one of `markers`;
 * binary ones too when `binary`), and what a parsed one means.
 */
export interface RealtimeDialect {
  readonly markers: readonly Buffer[];
  readonly binary: boolean;
  /** Whether the API has an `error` event to send before the gateway's Close (OpenAI Realtime; Gemini Live has none). */
  readonly errorEvent: boolean;
  /**
   * Whether a session on a route with limits must be priced to go on: Live, whose model a key's allow-list cannot
   * limit (the handshake names none), so an unpriced one would be free against USD budgets.
   */
  readonly priceRequired: boolean;
  /** A parsed message: its usage to charge, or a refusal's message when the session may not go on; else nothing. */
  read(event: Obj, call: LlmCall): LlmUsage | string | undefined;
}

/** OpenAI Realtime (and Azure's): `session.created`/`session.updated` name the model, `response.done` carries usage. */
export const OPENAI_REALTIME: RealtimeDialect = {
  markers: [Buffer.from('"response.done"'), Buffer.from('"session.')],
  binary: false,
  errorEvent: true,
  priceRequired: false,
  read(event, call) {
    if ((event.type === 'session.created' || event.type === 'session.updated') && isObj(event.session)) call.setResponseModel(event.session.model);
    else if (event.type === 'response.done' && isObj(event.response)) return realtimeUsage(event.response.usage);
    return undefined;
  },
};

/**
 * The model a Live client's `setup` named, by session: not a metrics label until the provider has charged for it
 * (a client could name any string).
 */
const liveModels = new WeakMap<LlmCall, string>();

/**
 * Gemini and Vertex Live (`BidiGenerateContent`): a server message's `usageMetadata` is the usage of the turn it ends
 * (ADR 0192), sent as text or binary frames. The model is the one the client's `setup` named (read by a second meter
 * on the client's frames); usage before it is known cannot be priced, so the session ends then.
 */
export const GEMINI_LIVE: RealtimeDialect = {
  markers: [Buffer.from('"usageMetadata"')],
  binary: true,
  errorEvent: false,
  priceRequired: true,
  read(event, call) {
    if (!isObj(event.usageMetadata)) return undefined;
    const model = liveModels.get(call);
    if (model === undefined) return 'the Live session reported usage before its setup named a model';
    // The provider charged for it: the client's name for the model is vouched for (a metrics label) only now.
    call.setResponseModel(model);
    return usageFromGemini(event.usageMetadata);
  },
};

/**
 * The API of an upgrade the gateway meters, if it is one: Gemini or Vertex Live (a `BidiGenerateContent` path), or
 * OpenAI's or Azure's Realtime (the `ai` policy says the path is `realtime`, or it ends in `/realtime`). Other
 * upgrades (any other WebSocket API) pass as bytes, unread.
 */
export function meteredRealtime(route: string | undefined, path: string): RealtimeDialect | undefined {
  if (path.includes('BidiGenerateContent')) return GEMINI_LIVE;
  return route === 'realtime' || path.endsWith('/realtime') ? OPENAI_REALTIME : undefined;
}

/** A Live `setup.model` as the catalog names it: `models/gemini-...` or Vertex's `projects/.../models/gemini-...`. */
function liveModel(name: unknown): string | undefined {
  if (typeof name !== 'string') return undefined;
  const at = name.lastIndexOf('models/');
  const model = at === -1 ? name : name.slice(at + 'models/'.length);
  return model.length > 0 && model.length <= MAX_MODEL_NAME ? model : undefined;
}

/** The client's first Gemini Live message, its `setup`: the model it names is the session's. */
export const LIVE_SETUP: RealtimeDialect = {
  markers: [Buffer.from('"setup"')],
  binary: true,
  errorEvent: false,
  priceRequired: false,
  read(event, call) {
    const model = isObj(event.setup) ? liveModel(event.setup.model) : undefined;
    if (model !== undefined) liveModels.set(call, model);
    return undefined;
  },
};
