import { llmCall } from 'switchyard/sdk';
import type { CompileContext, Exchange, LlmCallInfo as SdkLlmCallInfo, MetricCounter } from 'switchyard/sdk';
import { mergeUsage } from './usage.ts';
import type { LlmUsage } from './usage.ts';

/** What the `ai` backend learned about one LLM call (the SDK's `llmCall` attribute, with the full usage). */
export interface LlmCallInfo extends SdkLlmCallInfo {
  readonly usage: LlmUsage;
}

/** The SDK's `llmCall`: set on every LLM request, for policies that act after the response (token rate limits). */
export const LLM_CALL = llmCall;

/** The LLM counters on `/metrics`: tokens by provider, model and type, and calls by provider, model and streaming. */
export interface LlmMetrics {
  readonly tokens: MetricCounter;
  readonly calls: MetricCounter;
}

export function llmMetrics(ctx: CompileContext): LlmMetrics {
  return {
    tokens: ctx.counter('switchyard_llm_tokens_total', 'LLM tokens by provider, model and type (input, output), as the provider reported them.'),
    calls: ctx.counter('switchyard_llm_requests_total', 'LLM calls sent to a provider, by provider, model and streaming.'),
  };
}

/**
 * One LLM call's telemetry: access-log fields `llm.provider`, `llm.model`, `llm.responseModel` (when it differs),
 * `llm.streaming`, `llm.inputTokens`, `llm.outputTokens` (and `llm.cachedInputTokens`, `llm.reasoningTokens` when
 * reported), written as soon as each is known so a stream cut short still logs what arrived.
 */
export class LlmCall implements LlmCallInfo {
  readonly provider: string;
  readonly requestModel: string | undefined;
  responseModel: string | undefined = undefined;
  readonly streaming: boolean;
  readonly usage: LlmUsage = {};
  private readonly ex: Exchange;
  private readonly metrics: LlmMetrics | undefined;
  /** Tokens already added to the metrics (usage arrives in parts and may be restated cumulatively). */
  private countedInput = 0;
  private countedOutput = 0;

  constructor(ex: Exchange, provider: string, requestModel: string | undefined, streaming: boolean, metrics?: LlmMetrics) {
    this.ex = ex;
    this.provider = provider;
    this.requestModel = requestModel;
    this.streaming = streaming;
    this.metrics = metrics;
    ex.logField('llm.provider', provider);
    if (requestModel !== undefined) {
      ex.logField('llm.model', requestModel);
      ex.logField('llm.streaming', streaming);
      metrics?.calls.inc({ provider, model: requestModel, streaming: String(streaming) });
    }
    ex.set(LLM_CALL, this);
  }

  setResponseModel(model: unknown): void {
    if (typeof model !== 'string' || !model || model === this.responseModel) return;
    this.responseModel = model;
    if (model !== this.requestModel) this.ex.logField('llm.responseModel', model);
  }

  addUsage(usage: LlmUsage | undefined): void {
    if (!usage) return;
    mergeUsage(this.usage, usage);
    const u = this.usage;
    if (u.inputTokens !== undefined) this.ex.logField('llm.inputTokens', u.inputTokens);
    if (u.outputTokens !== undefined) this.ex.logField('llm.outputTokens', u.outputTokens);
    if (u.cachedInputTokens) this.ex.logField('llm.cachedInputTokens', u.cachedInputTokens);
    if (u.reasoningTokens) this.ex.logField('llm.reasoningTokens', u.reasoningTokens);
    if (this.metrics) this.countTokens(u.inputTokens ?? 0, u.outputTokens ?? 0);
  }

  private countTokens(input: number, output: number): void {
    const model = this.requestModel ?? this.responseModel ?? 'unknown';
    if (input > this.countedInput) {
      this.metrics!.tokens.inc({ provider: this.provider, model, type: 'input' }, input - this.countedInput);
      this.countedInput = input;
    }
    if (output > this.countedOutput) {
      this.metrics!.tokens.inc({ provider: this.provider, model, type: 'output' }, output - this.countedOutput);
      this.countedOutput = output;
    }
  }
}
