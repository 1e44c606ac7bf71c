/** The `a2a` policy's metric on `/metrics` (ADR 0121): A2A calls by route, method and outcome, with their duration. */
import { defineAttribute } from 'switchyard/sdk';
import type { CompileContext, Exchange, MetricHistogram } from 'switchyard/sdk';
import type { ResponseInfo } from './response-info.ts';
import { knownOrOther } from '../../lib/telemetry/known-names.ts';

/** OTel advisory buckets for operation durations (seconds), as the MCP histogram: A2A calls run for minutes. */
const BUCKETS = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300];

/** The methods A2A defines (v1.0 names, then v0.3): any other name is `_OTHER`, so clients add no series or span names. */
const METHODS: ReadonlySet<string> = new Set([
  'SendMessage',
  'SendStreamingMessage',
  'GetTask',
  'ListTasks',
  'CancelTask',
  'SubscribeToTask',
  'CreateTaskPushNotificationConfig',
  'GetTaskPushNotificationConfig',
  'ListTaskPushNotificationConfigs',
  'DeleteTaskPushNotificationConfig',
  'GetExtendedAgentCard',
  'message/send',
  'message/stream',
  'tasks/get',
  'tasks/list',
  'tasks/cancel',
  'tasks/resubscribe',
  'tasks/pushNotificationConfig/set',
  'tasks/pushNotificationConfig/get',
  'tasks/pushNotificationConfig/list',
  'tasks/pushNotificationConfig/delete',
  'agent/getAuthenticatedExtendedCard',
  'unknown',
]);

/** The `a2a_method` label and the span name of a method (ADR 0130). */
export function methodLabel(method: string): string {
  return knownOrOther(METHODS, method);
}

/** What the answer said (`success`, `error`, `unknown`), once read; and whether the call was counted. */
interface CallOutcome {
  outcome: ResponseInfo['outcome'] | undefined;
  counted: boolean;
}

const outcomeAttribute = defineAttribute<CallOutcome>('a2a.outcome');

/** Remember what the answer said, for the metric. */
export function noteOutcome(ex: Exchange, info: ResponseInfo): void {
  const state = ex.get(outcomeAttribute);
  if (state) state.outcome = info.outcome;
  else ex.set(outcomeAttribute, { outcome: info.outcome, counted: false });
}

/**
 * `switchyard_a2a_call_duration_seconds`: from the request to the end of the answer (a stream's last byte).
 * `outcome` is what the answer said; `failed` when no A2A answer was read and the status is an error (the gateway
 * refused or timed out, the agent answered an HTTP error without an A2A body); `unknown` otherwise.
 */
export class CallMetrics {
  private readonly histogram: MetricHistogram;

  constructor(ctx: CompileContext) {
    this.histogram = ctx.histogram(
      'switchyard_a2a_call_duration_seconds',
      'A2A calls through the gateway, from the request to the end of the answer (a stream included), by route, A2A method and outcome.',
      ['route', 'a2a_method', 'outcome'],
      BUCKETS,
    );
  }

  /** Count the call once (the policy on both a route and its backend runs the log hook twice). */
  record(ex: Exchange, method: string, status: number): void {
    let state = ex.get(outcomeAttribute);
    if (state?.counted) return;
    if (!state) ex.set(outcomeAttribute, (state = { outcome: undefined, counted: false }));
    state.counted = true;
    const outcome = state.outcome ?? (status >= 400 ? 'failed' : 'unknown');
    this.histogram.observe({ route: ex.route.name, a2a_method: methodLabel(method), outcome }, (performance.now() - ex.startTime) / 1000);
  }
}
