import { defineAttribute, llmCall } from 'switchyard/sdk';
import type { Exchange, LlmCallInfo as SdkLlmCallInfo, PluginSpan, PluginSpans } from 'switchyard/sdk';
import type { LlmWireFormat } from './contract.ts';
import { inputMessages, outputMessages, StreamContent } from './content.ts';
import type { LlmFormat } from './formats/format.ts';
import { SpanOutcome } from './span-outcome.ts';
import type { LlmEvent } from './events.ts';
import type { Obj } from './json.ts';
import { callCost } from './prices.ts';
import type { ModelPrice } from './prices.ts';
import { errorType, streamErrorType } from './error-type.ts';
import { mergeUsage } from './usage.ts';
import { cutUsage } from './output-bytes.ts';
import type { RequestFigures } from './output-bytes.ts';
import { callSeries, genAiProviderName } from './llm-metrics.ts';
import type { CallSeries, LlmMetrics } from './llm-metrics.ts';
import type { LlmUsage } from './usage.ts';
import { celView, viewUsage } from './call-view.ts';
import { genAiRequestAttributes } from './request-attributes.ts';
import type { CelView } from './call-view.ts';

/** What the `ai` backend learned about one LLM call (the SDK's `llmCall` attribute, with the full usage). */
export interface LlmCallInfo extends SdkLlmCallInfo {
  readonly usage: LlmUsage;
}

/** The SDK's `llmCall`: set on every LLM request, for policies that act after the response (token rate limits). */
export const LLM_CALL = llmCall;

/**
 * The CEL variable `llm` (declared by the `ai` backend's manifest): the call as CEL sees it, kept up to date, so an
 * expression evaluated at the end of the request (the access log's `fields.add`) sees the final counts and cost.
 * Counts are CEL ints; a field not known (yet) is absent (`has(llm.cost)` is false for an unpriced model).
 */
export const LLM_CEL = defineAttribute<object>('llm');

/** The price lookup of a backend: its `ai.costs` over the catalog (plugins/backends/ai/costs.ts). */
export type PriceOf = (model: string) => ModelPrice | undefined;

/**
 * One LLM call's telemetry: access-log fields `llm.provider`, `llm.model`, `llm.responseModel` (when it differs),
 * `llm.streaming`, `llm.inputTokens`, `llm.outputTokens` (and `llm.cachedInputTokens`, `llm.reasoningTokens` when
 * reported), `llm.cost` (USD, when the model is priced), written as soon as each is known so a stream cut short still
 * logs what arrived.
 */
export class LlmCall implements LlmCallInfo {
  readonly provider: string;
  readonly requestModel: string | undefined;
  responseModel: string | undefined = undefined;
  streaming: boolean;
  readonly usage: LlmUsage = {};
  /** USD, once usage is known and the model is priced. */
  cost: number | undefined = undefined;
  private readonly ex: Exchange;
  private readonly metrics: LlmMetrics | undefined;
  private readonly priceOf: PriceOf | undefined;
  /** Looked up at the first usage (the response model is known by then): a price, or null when unpriced. */
  private price: { model: string; price: ModelPrice } | null | undefined = undefined;
  /** Tokens and cost already added to the metrics (usage arrives in parts and may be restated cumulatively). */
  private countedInput = 0;
  private countedOutput = 0;
  private readonly operation: string;
  private readonly startedAt = performance.now();
  private firstEventSeen = false;
  private countedCost = 0;
  private finished = false;
  /** The error type of an error the provider reported in its stream: the call ends failed with it. */
  private streamFailure: string | undefined = undefined;
  /** UTF-8 bytes of output the streamed answer carried so far (its events' text and arguments: output-bytes.ts). */
  private outputBytes = 0;
  /**
   * The request's prompt estimate (the token limits' rule) and the most output it allows (`maxOutputTokens`),
   * read only when a cut stream needs them.
   */
  requestFigures: (() => RequestFigures) | undefined = undefined;
  /**
   * Priced by the model the provider reports when it is priced, the request's otherwise: a realtime session, whose
   * URL may name an alias (`gpt-realtime`) while the session runs a dated model at its own prices (ADR 0192).
   */
  priceByResponseModel = false;

  /** The call's GenAI CLIENT span when the gateway traces (docs/observability.md "Traces"). */
  private readonly span: PluginSpan | undefined;
  /** True when the span records and the operator allows message content on it (`tracing.captureMessageContent`). */
  readonly capturesContent: boolean;
  /** A streamed answer's events, held to put its content on the span when it ends (content capture only). */
  private streamContent: StreamContent | undefined = undefined;
  /** What CEL sees as `llm` (the access log's `fields.add` evaluates it at the end of the request). */
  private readonly view: CelView;
  /** Where the answer's id and finish reasons go when the span records; else nothing reads them. */
  readonly outcome: SpanOutcome | undefined;

  /**
   * `passthrough`: a passthrough call whose path names an API has a span too, though its request model is not known
   * yet (`passthroughRequest` tells what is, ADR 0180).
   */
  constructor(ex: Exchange, provider: string, requestModel: string | undefined, streaming: boolean, metrics?: LlmMetrics, operation = 'chat', priceOf?: PriceOf, spans?: PluginSpans, passthrough = false) {
    this.span =
      spans?.enabled && (requestModel !== undefined || passthrough)
        ? // Named for the model once the provider vouched for it (`accepted`); until then for the operation alone, as
          // OTel names a call without a model: a made-up model name never becomes a span name.
          spans.start(requestModel !== undefined && metrics?.models.has(requestModel) ? `${operation} ${requestModel}` : operation, 'client', {
            'gen_ai.operation.name': operation,
            'gen_ai.provider.name': genAiProviderName(provider),
            'gen_ai.request.model': requestModel,
            'gen_ai.request.stream': passthrough ? undefined : streaming,
          })
        : undefined;
    this.capturesContent = this.span?.recording === true && spans!.captureMessageContent;
    this.outcome = this.span?.recording === true ? new SpanOutcome() : undefined;
    this.ex = ex;
    this.operation = operation;
    this.provider = provider;
    this.requestModel = requestModel;
    this.streaming = streaming;
    this.metrics = metrics;
    this.priceOf = priceOf;
    ex.logField('llm.provider', provider);
    if (requestModel !== undefined) {
      ex.logField('llm.model', requestModel);
      ex.logField('llm.streaming', streaming);
    }
    ex.set(LLM_CALL, this);
    ex.set(LLM_CEL, (this.view = celView(this)));
    // A client that leaves ends the span at once (a cut stream also fails the call when its body closes, answer.ts).
    // Only when tracing: an untraced call makes no abort controller (a streamed one does once it relays: relayingStream).
    if (this.span)
      ex.signal.addEventListener(
        'abort',
        () => {
          this.cutShort();
          this.fail(ex.signal.reason ?? new Error('the exchange was aborted'));
        },
        { once: true },
      );
  }

  private seriesOf: CallSeries | undefined = undefined;
  /**
   * Labelled by the request's model (else the answer's, once known), or `_OTHER` for one the provider has not answered
   * for: resolved once, on first use, which is after `accepted` for a call the provider answered.
   */
  private series(): CallSeries {
    const m = this.metrics!;
    return (this.seriesOf ??= callSeries(m, this.operation, this.provider, m.models.label(this.requestModel ?? this.responseModel ?? 'unknown'), this.streaming));
  }

  /**
   * A passthrough call's answer is a stream (its request was not read, ADR 0164): called before any of it is counted,
   * so its series are the streamed ones.
   */
  answerStreams(): void {
    if (this.seriesOf === undefined) this.streaming = true;
  }

  private counted = false;
  /**
   * The call is counted once its fate is known (answered, failed): its label is then known too. A passthrough call
   * (no request model) is counted when it ends, labelled by the model that answered.
   */
  private countCall(): void {
    if (this.counted || this.metrics === undefined) return;
    this.counted = true;
    this.series().calls.inc();
  }

  /** A passthrough call's model as its path or body names it: on its span only (its metrics name the answer's). */
  private spanModel: string | undefined = undefined;

  /**
   * What is known of a passthrough call's request, on its recorded span: the model its path or body names, whether
   * it streams, the sampling settings of a body that was read.
   */
  passthroughRequest(model: string | undefined, stream: boolean | undefined, body: Obj | undefined): void {
    this.spanModel = model;
    this.span!.setAttributes({ 'gen_ai.request.model': model, 'gen_ai.request.stream': stream, ...(body ? genAiRequestAttributes(body) : undefined) });
    if (model !== undefined && this.metrics?.models.has(model)) this.span!.rename(`${this.operation} ${model}`);
  }

  /** The provider answered with a success status: it knows the model, which may be a label from now on. */
  accepted(): void {
    const model = this.requestModel ?? this.spanModel;
    if (this.metrics !== undefined && model !== undefined && !this.metrics.models.has(model)) {
      this.metrics.models.vouch(model);
      if (this.span !== undefined && this.metrics.models.has(model)) this.span.rename(`${this.operation} ${model}`);
    }
    // A passthrough call (no request model) is counted when it ends, by the model its answer names.
    if (this.requestModel !== undefined) this.countCall();
  }

  /** A passthrough stream's time to first chunk, observed when it ends: its label (the answer's model) comes later. */
  private firstChunkSeconds: number | undefined = undefined;

  /** A streamed event arrived: the first one sets the time to first token. */
  firstEvent(): void {
    if (this.firstEventSeen) return;
    this.firstEventSeen = true;
    if (this.span?.recording && this.streaming) this.span.setAttributes({ 'gen_ai.response.time_to_first_chunk': (performance.now() - this.startedAt) / 1000 });
    if (this.metrics && this.streaming) {
      const seconds = (performance.now() - this.startedAt) / 1000;
      if (this.requestModel === undefined) this.firstChunkSeconds = seconds;
      else this.observeFirstChunk(this.series(), seconds);
    }
  }

  private observeFirstChunk(series: CallSeries, seconds: number): void {
    series.timeToFirstChunk.observe(seconds);
    series.timeToFirstToken.observe(seconds);
  }

  private relaying = false;
  private cut = false;
  /**
   * The answer is streamed to the client from now on: a cut is charged what it relayed (`cutShort`). The kernel
   * settles limits and writes the access log as soon as the client leaves or the deadline cuts, before the body
   * closes: the abort is the moment (a traced call's span listener already listens for it).
   */
  relayingStream(): void {
    this.relaying = true;
    if (!this.span) this.ex.signal.addEventListener('abort', () => this.cutShort(), { once: true });
  }

  /** Output bytes a streamed event carried. */
  addOutputBytes(bytes: number): void {
    this.outputBytes += bytes;
  }

  /**
   * A streamed answer cut before its end (ADR 0150): the usage the provider did not report yet is estimated, so
   * limits, costs and the log charge what was relayed: the output by its UTF-8 bytes / 4 (ADR 0157),
   * at most what the request allows, never below the output reported; the input by the prompt's estimate when none
   * was reported. Estimated counts are marked in the access log. Call before `fail`.
   */
  cutShort(): void {
    // Once: the abort and the body's close both report the cut.
    if (this.finished || !this.relaying || this.cut) return;
    this.cut = true;
    const add = cutUsage(this.usage, this.outputBytes, this.requestFigures?.());
    if (add.outputTokens !== undefined) this.ex.logField('llm.outputTokensEstimated', true);
    if (add.inputTokens !== undefined) this.ex.logField('llm.inputTokensEstimated', true);
    if (add.outputTokens !== undefined || add.inputTokens !== undefined) this.addUsage(add);
  }

  /** The provider reported an error in its stream; the first one is the call's failure when the stream ends. */
  streamError(error: unknown): void {
    this.streamFailure ??= streamErrorType(error);
  }

  /**
   * The answer ended: the request duration and the call's token usage are observed once. A stream that carried the
   * provider's error ended failed.
   */
  finish(): void {
    if (this.streamFailure !== undefined) return this.fail(this.streamFailure);
    this.countCall();
    if (this.finished) return;
    this.finished = true;
    if (this.span) this.endSpan(undefined);
    if (!this.metrics) return;
    const series = this.series();
    if (this.firstChunkSeconds !== undefined) this.observeFirstChunk(series, this.firstChunkSeconds);
    const seconds = (performance.now() - this.startedAt) / 1000;
    series.operationDuration('').observe(seconds);
    series.requestDuration.observe(seconds);
    if (this.usage.inputTokens !== undefined) series.inputUsage.observe(this.usage.inputTokens);
    if (this.usage.outputTokens !== undefined) series.outputUsage.observe(this.usage.outputTokens);
  }

  /**
   * A passthrough answer that is not read (neither JSON nor a stream: audio, a provider's error page): its span ends
   * by the status; nothing is counted, as for any answer not read (ADR 0171).
   */
  unread(status: number): void {
    if (this.finished) return;
    this.finished = true;
    if (this.span) this.endSpan(status >= 400 ? String(status) : undefined);
  }

  /** The call has ended, by `finish` or `fail`. */
  get ended(): boolean {
    return this.finished;
  }

  /** Run the provider call with the call's span active (its upstream attempts become children). */
  run<T>(fn: () => T): T {
    return this.span ? this.span.run(fn) : fn();
  }

  /**
   * The call failed (no answer, an error status, a stream cut short): its span ends with the error, its duration is
   * observed by its type, and the usage reported before it failed (a cut stream's) as a successful call's is.
   */
  fail(error: unknown): void {
    this.countCall();
    if (this.finished) return;
    this.finished = true;
    if (this.span) this.endSpan(error);
    if (!this.metrics) return;
    const series = this.series();
    if (this.firstChunkSeconds !== undefined) this.observeFirstChunk(series, this.firstChunkSeconds);
    series.operationDuration(errorType(error)).observe((performance.now() - this.startedAt) / 1000);
    if (this.usage.inputTokens !== undefined) series.inputUsage.observe(this.usage.inputTokens);
    if (this.usage.outputTokens !== undefined) series.outputUsage.observe(this.usage.outputTokens);
  }

  /** `gen_ai.request.*` of the client's request (a recorded span only: check `outcome`). */
  recordRequest(body: Obj): void {
    this.span!.setAttributes(genAiRequestAttributes(body));
  }

  /** `gen_ai.input.messages`: the request as sent (content capture only; call when `capturesContent`). */
  recordInput(format: LlmFormat, body: Obj): void {
    this.span!.setAttributes({ 'gen_ai.input.messages': inputMessages(format, body) });
  }

  /** `gen_ai.output.messages` of a complete answer (content capture only). */
  recordOutput(format: LlmFormat, body: Obj): void {
    this.span!.setAttributes({ 'gen_ai.output.messages': outputMessages(format, body) });
  }

  /** One event of a streamed answer in `format` (content capture only): the answer is put together at the end. */
  recordEvent(format: LlmFormat, e: LlmEvent): void {
    (this.streamContent ??= new StreamContent(format)).add(e);
  }

  private endSpan(error: unknown): void {
    const span = this.span!;
    if (span.recording) {
      if (this.streamContent) span.setAttributes({ 'gen_ai.output.messages': this.streamContent.output() });
      if (this.outcome) span.setAttributes(this.outcome.attributes());
      span.setAttributes({
        'gen_ai.response.model': this.responseModel,
        'gen_ai.usage.input_tokens': this.usage.inputTokens,
        'gen_ai.usage.output_tokens': this.usage.outputTokens,
        // OTel GenAI's breakdown, each within the totals above; when the provider reported it and non-zero.
        'gen_ai.usage.reasoning.output_tokens': this.usage.reasoningTokens || undefined,
        'gen_ai.usage.cache_read.input_tokens': this.usage.cachedInputTokens || undefined,
        'gen_ai.usage.cache_creation.input_tokens': this.usage.cacheCreationInputTokens || undefined,
        // USD from the price catalog (no OTel name yet; absent for an unpriced model), as the access log's `llm.cost`.
        'gen_ai.usage.cost': this.cost,
      });
    }
    span.end(error);
  }

  setResponseModel(model: unknown): void {
    if (typeof model !== 'string' || !model || model === this.responseModel) return;
    this.responseModel = model;
    this.view.responseModel = model;
    // The provider's own name for what answered (the cost may be priced by it): a label, as a requested one it served.
    this.metrics?.models.vouch(model);
    if (model !== this.requestModel) this.ex.logField('llm.responseModel', model);
  }

  addUsage(usage: LlmUsage | undefined): void {
    if (!usage) return;
    mergeUsage(this.usage, usage);
    const u = this.usage;
    viewUsage(this.view, u);
    if (u.inputTokens !== undefined) this.ex.logField('llm.inputTokens', u.inputTokens);
    if (u.outputTokens !== undefined) this.ex.logField('llm.outputTokens', u.outputTokens);
    if (u.cachedInputTokens) this.ex.logField('llm.cachedInputTokens', u.cachedInputTokens);
    if (u.reasoningTokens) this.ex.logField('llm.reasoningTokens', u.reasoningTokens);
    if (this.metrics) this.countTokens(u.inputTokens ?? 0, u.outputTokens ?? 0);
    if (this.priceOf) this.addCost();
  }

  /** Price the model sent (else the one that answered); the cost is recomputed whole from the usage so far. */
  private addCost(): void {
    if (this.price === undefined) {
      const reported = this.priceByResponseModel && this.responseModel !== undefined ? this.priceOf!(this.responseModel) : undefined;
      const byRequest = reported === undefined && this.requestModel !== undefined ? this.priceOf!(this.requestModel) : undefined;
      const model = reported ? this.responseModel : byRequest ? this.requestModel : this.responseModel;
      const price = reported ?? byRequest ?? (model !== undefined ? this.priceOf!(model) : undefined);
      this.price = price && model !== undefined ? { model, price } : null;
      if (this.price === null && this.metrics) this.series().unpriced.inc();
    }
    if (this.price === null) return;
    const cost = callCost(this.price.price, this.usage);
    this.cost = cost;
    this.view.cost = cost;
    this.ex.logField('llm.cost', cost);
    if (this.metrics && cost > this.countedCost) {
      // A catalog pattern (`claude-*`) prices names a client makes up: the label is the vouched name or `_OTHER`.
      this.series().cost(this.metrics.models.label(this.price.model)).inc(cost - this.countedCost);
      this.countedCost = cost;
    }
  }

  private countTokens(input: number, output: number): void {
    if (input > this.countedInput) {
      this.series().inputTokens.inc(input - this.countedInput);
      this.countedInput = input;
    }
    if (output > this.countedOutput) {
      this.series().outputTokens.inc(output - this.countedOutput);
      this.countedOutput = output;
    }
  }
}
