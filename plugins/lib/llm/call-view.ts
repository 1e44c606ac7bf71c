// What CEL sees as `llm` of one call (the access log's `fields.add` evaluates it at the end of the request).
import type { LlmUsage } from './usage.ts';

const int = (n: number | undefined): bigint | undefined => (n === undefined ? undefined : BigInt(Math.trunc(n)));

/**
 * The CEL view of a call: a plain object of data fields (one literal per LLM request, cheaper to make than one of
 * getters), brought up to date by the call as the answer's model, usage and cost become known.
 */
export interface CelView {
  provider: string;
  streaming: boolean;
  requestModel: string | undefined;
  responseModel: string | undefined;
  inputTokens: bigint | undefined;
  outputTokens: bigint | undefined;
  totalTokens: bigint | undefined;
  cachedInputTokens: bigint | undefined;
  cacheCreationInputTokens: bigint | undefined;
  reasoningTokens: bigint | undefined;
  cost: number | undefined;
}

export function celView(call: { readonly provider: string; readonly streaming: boolean; readonly requestModel: string | undefined }): CelView {
  return {
    provider: call.provider,
    streaming: call.streaming,
    requestModel: call.requestModel,
    responseModel: undefined,
    inputTokens: undefined,
    outputTokens: undefined,
    totalTokens: undefined,
    cachedInputTokens: undefined,
    cacheCreationInputTokens: undefined,
    reasoningTokens: undefined,
    cost: undefined,
  };
}

/** The usage so far, into the view (CEL ints). */
export function viewUsage(view: CelView, u: LlmUsage): void {
  view.inputTokens = int(u.inputTokens);
  view.outputTokens = int(u.outputTokens);
  view.totalTokens = u.inputTokens === undefined && u.outputTokens === undefined ? undefined : int((u.inputTokens ?? 0) + (u.outputTokens ?? 0));
  view.cachedInputTokens = int(u.cachedInputTokens);
  view.cacheCreationInputTokens = int(u.cacheCreationInputTokens);
  view.reasoningTokens = int(u.reasoningTokens);
}
