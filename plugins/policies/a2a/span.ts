/**
 * The span of one A2A call (ADR 0055): named for its method (`message/send`, `SendMessage`, `tasks/get`; `_OTHER` for a
 * name A2A does not define, ADR 0130), a CLIENT
 * span, as the gateway calls the agent on the client's behalf (OpenTelemetry GenAI "invoke agent client span"), and
 * the parent of the upstream attempts. Attributes: `a2a.method`, `jsonrpc.request.id`, `gen_ai.operation.name`
 * (`invoke_agent` for a message), `gen_ai.agent.name` (from the agent's card, once served through the route),
 * `gen_ai.conversation.id` and `a2a.context.id` (the A2A context), `a2a.task.id`, and from the answer the task
 * state, the result kind and the outcome; a JSON-RPC error or a 5xx marks it as an error.
 */
import { defineAttribute } from 'switchyard/sdk';
import type { Exchange, PluginSpan, PluginSpans } from 'switchyard/sdk';
import type { ResponseInfo } from './response-info.ts';
import { methodLabel } from './metrics.ts';
import { OTHER } from '../../lib/telemetry/known-names.ts';

/** The methods that send a message to the agent (v0.3 and v1.0 names): `gen_ai.operation.name` `invoke_agent`. */
const MESSAGE_METHODS: ReadonlySet<string> = new Set(['message/send', 'message/stream', 'SendMessage', 'SendStreamingMessage']);

/** The request's A2A span, ended by the policy's log hook. */
const spanAttribute = defineAttribute<A2aSpan>('a2a.span');

interface A2aSpan {
  readonly span: PluginSpan;
  /** Whether the answer said the call failed (a JSON-RPC error), with its code. */
  error: string | undefined;
  /** `a2a` on both the route and its backend runs the log hook twice. */
  ended: boolean;
}

/** What the request said about the call. */
export interface A2aCall {
  readonly method: string;
  readonly id?: string;
  readonly contextId?: string;
  readonly taskId?: string;
}

/** Start the call's span (when the request is sampled) and make it the parent of the forwarded request. */
export function startCallSpan(spans: PluginSpans, ex: Exchange, call: A2aCall, agent: string | undefined): void {
  // A method A2A does not define is `_OTHER`, the name sent in `rpc.method_original` (ADR 0130).
  const method = methodLabel(call.method);
  const span = spans.start(method, 'client', {
    'a2a.method': method,
    'rpc.method_original': method === OTHER ? call.method : undefined,
    'jsonrpc.request.id': call.id,
    'gen_ai.operation.name': MESSAGE_METHODS.has(call.method) ? 'invoke_agent' : undefined,
    'gen_ai.agent.name': agent,
    'gen_ai.conversation.id': call.contextId,
    'a2a.context.id': call.contextId,
    'a2a.task.id': call.taskId,
  });
  if (span === undefined) return;
  span.enclose(ex);
  ex.set(spanAttribute, { span, error: undefined, ended: false });
}

/** What the answer said, on the span. */
export function spanResponse(ex: Exchange, info: ResponseInfo): void {
  const state = ex.get(spanAttribute);
  if (state === undefined || !state.span.recording) return;
  state.span.setAttributes({
    'a2a.response.outcome': info.outcome,
    'a2a.response.error_code': info.errorCode,
    'a2a.response.error_reason': info.errorReason,
    'a2a.result.kind': info.resultKind,
    'a2a.task.state': info.taskState,
    'a2a.task.id': info.taskId,
    'gen_ai.conversation.id': info.contextId,
    'a2a.context.id': info.contextId,
  });
  if (info.outcome === 'error') state.error = info.errorCode === undefined ? 'jsonrpc_error' : String(info.errorCode);
}

/** End the span once the response is done (its stream included): an error for a JSON-RPC error or a 5xx. */
export function endCallSpan(ex: Exchange, status: number): void {
  const state = ex.get(spanAttribute);
  if (state === undefined || state.ended) return;
  state.ended = true;
  state.span.setAttributes({ 'http.response.status_code': status });
  state.span.end(state.error ?? (status >= 500 ? String(status) : undefined));
}

/** Agents' names from the cards served through one `a2a` policy, by the path the card describes (bounded). */
export class AgentNames {
  private readonly names = new Map<string, string>();

  remember(base: string, name: unknown): void {
    if (typeof name !== 'string' || name === '') return;
    this.names.delete(base);
    this.names.set(base, name);
    if (this.names.size > 64) this.names.delete(this.names.keys().next().value!);
  }

  /** The name of the agent whose card path is the longest prefix of `path`. */
  lookup(path: string): string | undefined {
    if (this.names.size === 0) return undefined;
    let best: string | undefined;
    let bestLength = -1;
    for (const [base, name] of this.names) {
      if (base.length > bestLength && (base === '' || path === base || path.startsWith(base.endsWith('/') ? base : `${base}/`))) {
        best = name;
        bestLength = base.length;
      }
    }
    return best;
  }
}
