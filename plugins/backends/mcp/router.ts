import type { McpAuthorizer, McpItem } from '../../lib/mcp/authorizer.ts';
import { broadcast, list, shortenedTool } from './aggregate.ts';
import { RpcCode, RpcFailure, resultMessage } from './jsonrpc.ts';
import type { RpcMessage } from './jsonrpc.ts';
import { mayBeShortened, prefixResult, splitName, splitUri } from './naming.ts';
import type { Call } from './responder.ts';
import { LIMIT_CODE, LOG_LEVELS } from './runtime.ts';
import type { Json } from './runtime.ts';
import type { McpSession } from './session.ts';
import { MAX_SUBSCRIBED_URI, MAX_SUBSCRIPTIONS, SUBSCRIPTION_METHODS } from './subscriptions.ts';
import type { TargetConn } from './target-conn.ts';

type ItemKind = McpItem['kind'];

/**
 * Route one client request of `s` to the target(s) that serve it: by method, then by the prefixed name or URI it
 * names (`<target>_<tool>`, `<target>+<uri>`) when several targets share the endpoint. A revision's own methods are
 * the revision's (`s.revision.route`); list calls are fanned out (aggregate.ts).
 */
export async function route(s: McpSession, call: Call, m: RpcMessage, auth: McpAuthorizer | undefined): Promise<void> {
  const params = m.params ?? {};
  const method = m.method!;
  const own = s.revision.route(s, call, method, params);
  if (own) return own;
  const multiplexed = s.rt.multiplexed;
  switch (method) {
    case 'ping':
      return s.finish(call, resultMessage(call.id, {}));
    case 'initialize':
      throw new RpcFailure(RpcCode.invalidRequest, 'the session is already initialized; send `initialize` without a session id to start a new one', 400);
    case 'tools/list':
      return list(s, call, params, 'tools', 'tools', 'tool', auth);
    case 'prompts/list':
      return list(s, call, params, 'prompts', 'prompts', 'prompt', auth);
    case 'resources/list':
      return list(s, call, params, 'resources', 'resources', 'resource', auth);
    case 'resources/templates/list':
      return list(s, call, params, 'resources', 'resourceTemplates', 'resource', auth);
    case 'tools/call':
      return byName(s, call, params, 'tool', auth);
    case 'prompts/get':
      return byName(s, call, params, 'prompt', auth);
    case 'resources/read':
    case 'resources/subscribe':
    case 'resources/unsubscribe':
      return byUri(s, call, params, 'uri', 'resource', auth);
    case 'completion/complete':
      return completion(s, call, params, auth);
    case 'logging/setLevel':
      if (!multiplexed) break;
      // Targets' refusals of a broadcast are only logged: a level no target can take is refused here (ADR 0186).
      if (typeof params.level !== 'string' || !LOG_LEVELS.includes(params.level)) {
        throw new RpcFailure(RpcCode.invalidParams, `Invalid params: \`level\` must be one of ${LOG_LEVELS.join(', ')}`, 400);
      }
      return broadcast(s, call, params, 'logging');
    case 'tasks/list':
      if (multiplexed) return list(s, call, params, 'tasks', 'tasks', undefined, undefined);
      break;
  }
  if (!multiplexed) return forward(s, call, s.conns[0]!, params);
  // A method the gateway does not know: route it by the name, URI or task id in its params, if any.
  if (typeof params.name === 'string' && splitName(params.name) && s.target(splitName(params.name)!.target)) {
    const split = splitName(params.name)!;
    return forward(s, call, s.target(split.target)!, { ...params, name: split.rest });
  }
  for (const field of ['uri', 'taskId'] as const) {
    const value = params[field];
    const split = typeof value === 'string' ? splitUri(value) : undefined;
    if (split && s.target(split.target)) return forward(s, call, s.target(split.target)!, { ...params, [field]: split.rest });
  }
  throw new RpcFailure(RpcCode.methodNotFound, `\`${method}\` cannot be routed: several targets are configured and its params name none of them`, 400);
}

/** The callback a target connection calls once a request of `call` is on its way: noted for cancellation. */
export function sent(call: Call, conn: TargetConn): (id: number) => boolean {
  return (id) => {
    if (call.done) return false;
    call.refs.push({ conn, id });
    call.responder.commit();
    return true;
  };
}

/** The answer of a target, passed to the client (prefixing what routes back when multiplexed). */
export function relay(s: McpSession, call: Call, conn: TargetConn, answer: RpcMessage): void {
  if (s.rt.multiplexed && answer.result) prefixResult(conn.name, call.method, answer.result);
  const out: RpcMessage = { jsonrpc: '2.0', id: call.id };
  if (answer.error) out.error = answer.error;
  else out.result = answer.result ?? {};
  s.finish(call, out);
}

/** Send the call to one target and relay its answer; (un)subscriptions are remembered (subscriptions.ts). */
export async function forward(s: McpSession, call: Call, conn: TargetConn, params: Json | undefined, onAnswer?: (answer: RpcMessage) => void): Promise<void> {
  const subscribing = SUBSCRIPTION_METHODS.has(call.method);
  if (call.method === 'resources/subscribe' && typeof params?.uri === 'string' && params.uri.length > MAX_SUBSCRIBED_URI) {
    throw new RpcFailure(RpcCode.invalidParams, `a resource URI to subscribe to is at most ${MAX_SUBSCRIBED_URI} characters`, 400);
  }
  if (call.method === 'resources/subscribe' && !s.subscriptions.admits(conn.name, params?.uri)) {
    throw new RpcFailure(LIMIT_CODE, `too many resource subscriptions on this session (the limit is ${MAX_SUBSCRIPTIONS} per target); unsubscribe first`, 429);
  }
  // (Un)subscribe answers at once: its response waits for it, so the re-sealed session id can go in its headers.
  if (subscribing && s.kind === 'streamable') call.responder.hold?.();
  const answer = await conn.request(call.method, params, sent(call, conn), call.requestId, call);
  if (subscribing && !answer.error && typeof params?.uri === 'string') noteSubscription(s, call, conn, params.uri);
  onAnswer?.(answer);
  relay(s, call, conn, answer);
}

/**
 * Remember a subscription the target accepted (or forget an unsubscribed one), to replay it when the target is
 * restarted. A stateful streamable-HTTP session is sealed again, so the new id carries the subscriptions to any
 * replica that resumes it; it is sent in this response's `Mcp-Session-Id` header (clients that adopt it, such as
 * the SDK's, keep it; the older ids stay valid).
 */
function noteSubscription(s: McpSession, call: Call, conn: TargetConn, uri: string): void {
  if (!s.holdsSubscriptions) return;
  const changed = s.subscriptions.note(call.method, conn.name, uri);
  if (!changed || s.kind !== 'streamable' || !s.token) return;
  const token = s.seal();
  s.onResealed?.(token);
  if (!call.responder.setHeader?.('mcp-session-id', token)) s.logger.debug('the response had started: the re-sealed session id was not sent', { method: call.method });
}

function unknown(kind: ItemKind, name: string): RpcFailure {
  return new RpcFailure(RpcCode.invalidParams, `Unknown ${kind}: ${name}`, 400);
}

/** The target a prefixed name or URI names (`split`), or the only target; and the name as the target knows it. */
function resolve(s: McpSession, value: string, split: typeof splitName): { conn: TargetConn | undefined; upstream: string } {
  if (!s.rt.multiplexed) return { conn: s.conns[0], upstream: value };
  const parts = split(value);
  return { conn: parts && s.target(parts.target), upstream: parts ? parts.rest : value };
}

async function byName(s: McpSession, call: Call, params: Json, kind: 'tool' | 'prompt', auth: McpAuthorizer | undefined): Promise<void> {
  const name = params.name;
  if (typeof name !== 'string') throw new RpcFailure(RpcCode.invalidParams, '`params.name` must be a string', 400);
  const { conn, upstream } = resolve(s, name, splitName);
  // A name shortened to fit 64 characters routes to the tool it stands for (ADR 0182).
  const upstreamName = conn && kind === 'tool' && s.rt.multiplexed && mayBeShortened(conn.name, upstream) ? ((await shortenedTool(s, call, conn, upstream)) ?? upstream) : upstream;
  if (!conn || (auth && !auth({ kind, target: conn.name, name: upstreamName, method: call.method }))) throw unknown(kind, name);
  const forwarded = s.rt.multiplexed ? { ...params, name: upstreamName } : params;
  // The name is the client's: a span name and a label only once the target declared it in its list, or answered it
  // without an error (a made-up name gets a JSON-RPC error, or a tool result with `isError`, as the MCP SDK answers).
  const names = conn.target.names[kind];
  const vouch = (answer: RpcMessage): void => {
    if (answer.error || answer.result?.isError === true || names.has(upstreamName)) return;
    names.vouch(upstreamName);
    if (names.has(upstreamName)) call.span?.rename(`${call.method} ${name}`);
  };
  const histogram = kind === 'tool' ? s.rt.metrics?.toolCall : undefined;
  if (!histogram) return forward(s, call, conn, forwarded, vouch);
  const started = performance.now();
  let errorType = '';
  try {
    await forward(s, call, conn, forwarded, (answer) => {
      if (answer.error) errorType = String(answer.error.code);
      vouch(answer);
    });
  } catch (err) {
    errorType = err instanceof RpcFailure ? String(err.code) : 'target_failed';
    throw err;
  } finally {
    histogram.observe({ mcp_method_name: 'tools/call', target: conn.name, gen_ai_tool_name: names.label(upstreamName), error_type: errorType }, (performance.now() - started) / 1000);
  }
}

async function byUri(s: McpSession, call: Call, params: Json, field: string, kind: ItemKind, auth: McpAuthorizer | undefined): Promise<void> {
  const uri = params[field];
  if (typeof uri !== 'string') throw new RpcFailure(RpcCode.invalidParams, `\`params.${field}\` must be a string`, 400);
  const { conn, upstream } = resolve(s, uri, splitUri);
  if (!conn || (auth && !auth({ kind, target: conn.name, name: upstream, method: call.method }))) throw unknown(kind, uri);
  return forward(s, call, conn, s.rt.multiplexed ? { ...params, [field]: upstream } : params);
}

async function completion(s: McpSession, call: Call, params: Json, auth: McpAuthorizer | undefined): Promise<void> {
  const ref = params.ref as Json | undefined;
  if (!ref || typeof ref !== 'object') throw new RpcFailure(RpcCode.invalidParams, '`params.ref` is required', 400);
  const isPrompt = ref.type === 'ref/prompt';
  const field = isPrompt ? 'name' : 'uri';
  const value = ref[field];
  if (typeof value !== 'string') throw new RpcFailure(RpcCode.invalidParams, `\`params.ref.${field}\` must be a string`, 400);
  const kind: ItemKind = isPrompt ? 'prompt' : 'resource';
  const { conn, upstream } = resolve(s, value, isPrompt ? splitName : splitUri);
  if (!conn || (auth && !auth({ kind, target: conn.name, name: upstream, method: call.method }))) throw unknown(kind, value);
  return forward(s, call, conn, s.rt.multiplexed ? { ...params, ref: { ...ref, [field]: upstream } } : params);
}
