// The `ai` backend's LLM metrics (docs/observability.md "LLM"): the counters and the OTel GenAI histograms, and
// the per-label-set series a call resolves once (split from telemetry.ts, which keeps the call itself).
import type { CompileContext, MetricCounter, MetricHistogram } from 'switchyard/sdk';
import { VouchedNames } from '../telemetry/known-names.ts';

/**
 * The LLM counters on `/metrics`: tokens by provider, model and type, calls by provider, model and streaming, cost
 * (USD) by provider and priced model, and calls with usage but no price by provider (a model label there would let
 * clients make up series).
 */
export interface LlmMetrics {
  readonly tokens: MetricCounter;
  readonly calls: MetricCounter;
  /** OTel `gen_ai.client.token.usage` (unit `{token}`): tokens of one call, by type. */
  readonly tokenUsage: MetricHistogram;
  /** OTel `gen_ai.client.operation.duration` (s): request sent to the end of the answer or the failure, by `error_type`. */
  readonly operationDuration: MetricHistogram;
  /** OTel `gen_ai.client.operation.time_to_first_chunk` (s): request sent to the first streamed event. */
  readonly timeToFirstChunk: MetricHistogram;
  /** Deprecated (ADR 0129), kept for dashboards built on it: `gen_ai.server.time_to_first_token`, as timeToFirstChunk. */
  readonly timeToFirstToken: MetricHistogram;
  /** Deprecated (ADR 0129): `gen_ai.server.request.duration`, operationDuration of successful calls. */
  readonly requestDuration: MetricHistogram;
  readonly cost: MetricCounter;
  readonly unpriced: MetricCounter;
  /** The backend's resolved series (see `callSeries`). */
  readonly series: SeriesCache;
  /**
   * Models a label or span name may show (ADR 0130): the backend's configured one, and those the provider answered
   * successfully for. Any other (a name a client made up) is `_OTHER`.
   */
  readonly models: VouchedNames;
}

/**
 * Models one backend keeps as labels: more than a route serves, and a provider that answers any name (a permissive
 * local server) still adds at most this many (about 25 kB of /metrics each at the longest label).
 */
const MAX_MODELS = 100;

/** A backend's series by label set, and the last one used: a route's calls mostly share one label set. */
interface SeriesCache {
  last: CallSeries | undefined;
  readonly byKey: Map<string, CallSeries>;
}

// Bucket boundaries are the OTel GenAI semantic conventions' advisory ones.
const TOKEN_BUCKETS = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864];
const TTFT_BUCKETS = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10];
const DURATION_BUCKETS = [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92];
const GEN_AI_LABELS = ['gen_ai_operation_name', 'gen_ai_provider_name', 'gen_ai_request_model'] as const;

/**
 * `gen_ai.provider.name` of a provider kind: OTel's name where it differs from the reference's (ADR 0171). The kind
 * stays in the access log's `llm.provider`, the `provider` label and the price catalog, where configs rely on it.
 */
export function genAiProviderName(kind: string): string {
  return kind === 'azure.openai' ? 'azure.ai.openai' : kind;
}

type Inc = { inc(by?: number): void };
type Observe = { observe(v: number): void };

/**
 * The series of one (operation, provider, model, streaming) label set, each resolved on first use (a series appears
 * on `/metrics` only once something is counted in it) and then bumped without building its key again.
 */
export class CallSeries {
  private readonly m: LlmMetrics;
  private readonly operation: string;
  private readonly provider: string;
  private readonly model: string;
  private readonly streaming: boolean;
  private callsS: Inc | undefined;
  private inputS: Inc | undefined;
  private outputS: Inc | undefined;
  private inputUsageS: Observe | undefined;
  private outputUsageS: Observe | undefined;
  private ttftS: Observe | undefined;
  private durationS: Observe | undefined;
  private ttfcS: Observe | undefined;
  private succeededS: Observe | undefined;
  /** Cost series by priced model (usually the request's own). */
  private readonly costS = new Map<string, Inc>();
  /** The provider as OTel names it, on the gen_ai_* series. */
  private readonly genAiProvider: string;
  constructor(m: LlmMetrics, operation: string, provider: string, model: string, streaming: boolean) {
    this.m = m;
    this.operation = operation;
    this.provider = provider;
    this.genAiProvider = genAiProviderName(provider);
    this.model = model;
    this.streaming = streaming;
  }
  is(operation: string, provider: string, model: string, streaming: boolean): boolean {
    return this.model === model && this.streaming === streaming && this.operation === operation && this.provider === provider;
  }
  get calls(): Inc {
    return (this.callsS ??= this.m.calls.child({ provider: this.provider, model: this.model, streaming: String(this.streaming) }));
  }
  get inputTokens(): Inc {
    return (this.inputS ??= this.m.tokens.child({ provider: this.provider, model: this.model, type: 'input' }));
  }
  get outputTokens(): Inc {
    return (this.outputS ??= this.m.tokens.child({ provider: this.provider, model: this.model, type: 'output' }));
  }
  get inputUsage(): Observe {
    return (this.inputUsageS ??= this.m.tokenUsage.child(this.operation, this.genAiProvider, this.model, 'input'));
  }
  get outputUsage(): Observe {
    return (this.outputUsageS ??= this.m.tokenUsage.child(this.operation, this.genAiProvider, this.model, 'output'));
  }
  get timeToFirstToken(): Observe {
    return (this.ttftS ??= this.m.timeToFirstToken.child(this.operation, this.genAiProvider, this.model));
  }
  get requestDuration(): Observe {
    return (this.durationS ??= this.m.requestDuration.child(this.operation, this.genAiProvider, this.model));
  }
  get timeToFirstChunk(): Observe {
    return (this.ttfcS ??= this.m.timeToFirstChunk.child(this.operation, this.genAiProvider, this.model));
  }
  /** The call's duration; a failed one's by its (bounded) error type, resolved each time (failures are rare). */
  operationDuration(errorType: string): Observe {
    if (errorType !== '') return this.m.operationDuration.child(this.operation, this.genAiProvider, this.model, errorType);
    return (this.succeededS ??= this.m.operationDuration.child(this.operation, this.genAiProvider, this.model, ''));
  }
  cost(model: string): Inc {
    if (model === this.costModel) return this.costLast!;
    let c = this.costS.get(model);
    if (!c) this.costS.set(model, (c = this.m.cost.child({ provider: this.provider, model })));
    this.costModel = model;
    return (this.costLast = c);
  }
  private costModel: string | undefined = undefined;
  private costLast: Inc | undefined = undefined;
  get unpriced(): Inc {
    return (this.unpricedS ??= this.m.unpriced.child({ provider: this.provider }));
  }
  private unpricedS: Inc | undefined = undefined;
}

/** Series kept per backend; beyond this many label sets a call resolves its series afresh (client-chosen models). */
const MAX_CACHED_SERIES = 1000;

/** The series of a call: the backend's last one when the labels match (no key string built then), else from its cache. */
export function callSeries(m: LlmMetrics, operation: string, provider: string, model: string, streaming: boolean): CallSeries {
  const last = m.series.last;
  if (last !== undefined && last.is(operation, provider, model, streaming)) return last;
  return (m.series.last = cachedSeries(m, operation, provider, model, streaming));
}

function cachedSeries(m: LlmMetrics, operation: string, provider: string, model: string, streaming: boolean): CallSeries {
  const cache = m.series.byKey;
  const key = `${operation}\u0000${provider}\u0000${model}\u0000${streaming}`;
  let s = cache.get(key);
  if (s) return s;
  s = new CallSeries(m, operation, provider, model, streaming);
  if (cache.size < MAX_CACHED_SERIES) cache.set(key, s);
  return s;
}

/** The backend's LLM metrics; `model`: the model its config pins, a label from the first call. */
export function llmMetrics(ctx: CompileContext, model?: string): LlmMetrics {
  return {
    tokens: ctx.counter('switchyard_llm_tokens_total', 'LLM tokens by provider, model and type (input, output), as the provider reported them (estimated for a stream cut before its usage).'),
    calls: ctx.counter('switchyard_llm_requests_total', 'LLM calls sent to a provider, by provider, model and streaming.'),
    tokenUsage: ctx.histogram('gen_ai_client_token_usage', 'Tokens used by one LLM call, by token type (input, output), operation, provider and requested model.', [...GEN_AI_LABELS, 'gen_ai_token_type'], TOKEN_BUCKETS),
    operationDuration: ctx.histogram('gen_ai_client_operation_duration_seconds', 'Time from sending an LLM request to a provider to the end of its answer, or its failure (error_type: the provider\'s status, timeout, _OTHER; empty on success), by operation, provider and requested model.', [...GEN_AI_LABELS, 'error_type'], DURATION_BUCKETS),
    timeToFirstChunk: ctx.histogram('gen_ai_client_operation_time_to_first_chunk_seconds', 'Time from sending a streamed LLM request to a provider to its first event, by operation, provider and requested model.', GEN_AI_LABELS, DURATION_BUCKETS),
    timeToFirstToken: ctx.histogram('gen_ai_server_time_to_first_token_seconds', 'Deprecated: gen_ai_client_operation_time_to_first_chunk_seconds (same measure, finer buckets).', GEN_AI_LABELS, TTFT_BUCKETS),
    requestDuration: ctx.histogram('gen_ai_server_request_duration_seconds', 'Deprecated: gen_ai_client_operation_duration_seconds{error_type=""} (successful calls).', GEN_AI_LABELS, DURATION_BUCKETS),
    cost: ctx.counter('switchyard_llm_cost_usd_total', 'What LLM calls cost in USD, from the price catalog, by provider and model.'),
    unpriced: ctx.counter('switchyard_llm_unpriced_requests_total', 'LLM calls that reported usage for a model the price catalog does not list, by provider.'),
    series: { last: undefined, byKey: new Map() },
    models: new VouchedNames(MAX_MODELS, model === undefined ? [] : [model]),
  };
}
