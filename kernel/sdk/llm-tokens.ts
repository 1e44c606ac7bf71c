import { defineAttribute } from './attributes.ts';
import type { AttributeKey } from './attributes.ts';
import type { Exchange } from './exchange.ts';
import type { Reply } from './reply.ts';

/**
 * The link between LLM backends and policies that count LLM tokens (`localRateLimit` / `remoteRateLimit` with
 * `type: tokens`), so either side can be replaced by a third-party plugin: the backend publishes what it learns
 * (`llmCall`), the policy hands the backend a limiter to call before the provider is (`llmTokenLimiters`).
 */

/** Token counts of one LLM call as the provider reported them; a field stays undefined until it is known. */
export interface LlmTokenUsage {
  /** Prompt tokens, cached input (reads and writes) included. */
  readonly inputTokens?: number;
  /** Completion tokens, reasoning included. */
  readonly outputTokens?: number;
}

/** What an LLM backend learned about one call; complete once the response has ended (streams included). */
export interface LlmCallInfo {
  /** Provider name as in telemetry (`openai`, `anthropic`, `gcp.gemini`, ...). */
  readonly provider: string;
  /** The model sent to the provider. */
  readonly requestModel: string | undefined;
  /** The model the provider says answered, when it says so. */
  readonly responseModel: string | undefined;
  readonly streaming: boolean;
  /** Filled as the response arrives; read it in `onLog` for the final counts. */
  readonly usage: LlmTokenUsage;
  /** What the call cost in USD from the backend's price catalog, once usage is known; undefined when unpriced. */
  readonly cost?: number | undefined;
}

/** Set by an LLM backend on every call it makes (read it in `onLog`: token rate limits, cost accounting). */
export const llmCall: AttributeKey<LlmCallInfo> = defineAttribute<LlmCallInfo>('llm.call');

/**
 * A token limit acting on one request. An LLM backend that finds limiters on the exchange estimates the request's
 * prompt tokens once it has parsed the request (only then: the estimate costs a walk over the prompt) and calls
 * `reserve` on each, in order, before calling the provider; a returned reply (429) is the answer and the provider
 * is not called. The real usage is published through `llmCall`; the policy settles against it in `onLog`.
 */
export interface LlmTokenLimiter {
  /**
   * `estimate`: the prompt-token estimate (0 when the backend could not read the prompt). `quote`: what the backend
   * knows of the call about to be made (model, output cap, price), for limits that count money or check the model.
   * Called again for each backend a failover tries (ADR 0039), with that backend's quote: a limiter checks what
   * depends on the quote (the model) each time but reserves only on the first call.
   */
  reserve(ex: Exchange, estimate: number, quote?: LlmCallQuote): Reply | undefined | Promise<Reply | undefined>;
  /**
   * A long-lived call (a realtime WebSocket session, ADR 0190) that outlives its request: `onLog` never settles it.
   * The backend reserves nothing for it but a check (`reserve` with 0 tokens and a quote whose `maxOutputTokens` is 0),
   * then charges each part's usage (`usage`; `cost`: its USD, undefined when unpriced) as it ends, on top of what was
   * charged before. A returned reply (the limit is used up, or the key revoked) ends the call; a limiter without
   * `charge` is not charged for it.
   */
  charge?(ex: Exchange, usage: LlmTokenUsage, cost: number | undefined): Reply | undefined | Promise<Reply | undefined>;
}

/** What an LLM backend knows of a call before making it; handed to `LlmTokenLimiter.reserve`. */
export interface LlmCallQuote {
  /** Provider name as in telemetry (`openai`, `anthropic`, ...). */
  readonly provider: string;
  /** The model the provider is to be called with; undefined on a passthrough request (the body is not read). */
  readonly model: string | undefined;
  /**
   * The model name the client asked for when it is a virtual model (the `ai` policy's `virtualModels`) that `model`
   * serves; a limit on the models a client may use applies to this name.
   */
  readonly virtualModel?: string;
  /** The request's own cap on output tokens (`max_tokens`, `max_completion_tokens`, ...), when it sets one. */
  readonly maxOutputTokens: number | undefined;
  /** The model's price from the backend's catalog, USD per 1M tokens; undefined when unpriced. */
  readonly price: { readonly input: number; readonly output: number } | undefined;
}

/**
 * How a limit settles one LLM call once its response has ended (`onLog`; ADR 0116):
 * - `usage`: the provider reported token counts: settle on them (and `cost`);
 * - `estimate`: the answer succeeded without any: keep what was reserved (an answer is not free because its usage
 *   went unreported);
 * - `refund`: the call failed without any (a status of 400 or more): give the reservation back. A client that left
 *   (499) after the call was made is not a failure: the provider still worked for it.
 */
export type LlmSettlement = 'usage' | 'estimate' | 'refund';

/** The settlement of the call `call` (the exchange's `llmCall`) answered with `status` (the one `onLog` gets). */
export function llmSettlement(call: LlmCallInfo | undefined, status: number): LlmSettlement {
  const usage = call?.usage;
  if (usage !== undefined && (usage.inputTokens !== undefined || usage.outputTokens !== undefined)) return 'usage';
  return status >= 400 && status !== 499 ? 'refund' : 'estimate';
}

/** The token limiters of a request, in policy order; set through `addLlmTokenLimiter`. */
export const llmTokenLimiters: AttributeKey<LlmTokenLimiter[]> = defineAttribute<LlmTokenLimiter[]>('switchyard.llmTokenLimiters');

/** Add a token limiter to the exchange (from a policy's request hook). */
export function addLlmTokenLimiter(ex: Exchange, limiter: LlmTokenLimiter): void {
  const list = ex.get(llmTokenLimiters);
  if (list) list.push(limiter);
  else ex.set(llmTokenLimiters, [limiter]);
}
