import type { PluginSpan, PluginSpans } from 'switchyard/sdk';
import { boundedName, knownOrOther, OTHER } from '../../lib/telemetry/known-names.ts';
import type { RpcMessage } from './jsonrpc.ts';
import { splitName } from './naming.ts';
import type { McpSession } from './session.ts';

/** Traces of the MCP backend (OpenTelemetry MCP conventions), when the gateway traces. */

/** Longest resource URI put on a span. */
const MAX_LOGGED_URI = 2048;

/** The methods MCP defines (revisions up to 2025-11-25): requests and notifications, either way. */
const METHODS: ReadonlySet<string> = new Set([
  'initialize',
  'ping',
  'tools/list',
  'tools/call',
  'prompts/list',
  'prompts/get',
  'resources/list',
  'resources/templates/list',
  'resources/read',
  'resources/subscribe',
  'resources/unsubscribe',
  'completion/complete',
  'logging/setLevel',
  'tasks/get',
  'tasks/result',
  'tasks/list',
  'tasks/cancel',
  'sampling/createMessage',
  'elicitation/create',
  'roots/list',
  'notifications/initialized',
  'notifications/cancelled',
  'notifications/progress',
  'notifications/message',
  'notifications/roots/list_changed',
  'notifications/resources/list_changed',
  'notifications/resources/updated',
  'notifications/tools/list_changed',
  'notifications/prompts/list_changed',
  'notifications/tasks/status',
  'notifications/elicitation/complete',
]);

/**
 * `mcp.method.name` of a method, and the span name it gives: a method MCP does not define is `_OTHER` (with the name
 * sent in `rpc.method_original`, as OTel's RPC conventions say), so a client cannot make up span names.
 */
export function methodName(method: string): string {
  return knownOrOther(METHODS, method);
}

/** `value` when it is a string short enough to log (a method, a tool or prompt name, an id): known-names' bound. */
export const loggableName = boundedName;

/** Whether the target a client-visible tool or prompt name routes to declared it (or answered it without an error). */
function declared(s: McpSession, kind: 'tool' | 'prompt', name: string): boolean {
  const split = s.rt.multiplexed ? splitName(name) : undefined;
  const conn = s.rt.multiplexed ? split && s.target(split.target) : s.conns[0];
  const own = split ? (kind === 'tool' ? (conn?.target.names.shortened.get(split.rest) ?? split.rest) : split.rest) : name;
  return conn !== undefined && conn.target.names[kind].has(own);
}

/**
 * The span of a client's JSON-RPC method: `tools/call get_weather`, the tool or prompt named only once its target
 * declared it (`named` renames it when the target's answer vouches for it). `sessionId`: the gateway session's
 * identity (stable across re-sealing and replicas), not the sealed `Mcp-Session-Id` token, which resumes the session.
 */
export function methodSpan(spans: PluginSpans, s: McpSession, m: RpcMessage, sessionId: string | undefined): PluginSpan | undefined {
  const sent = loggableName(m.method) ?? 'unknown';
  const method = methodName(sent);
  const params = m.params as Record<string, unknown> | undefined;
  const name = method === 'tools/call' || method === 'prompts/get' ? loggableName(params?.name) : undefined;
  const kind = method === 'tools/call' ? 'tool' : 'prompt';
  return spans.start(name !== undefined && declared(s, kind, name) ? `${method} ${name}` : method, 'server', {
    'mcp.method.name': method,
    'rpc.method_original': method === OTHER ? sent : undefined,
    'mcp.session.id': sessionId,
    // The version the session negotiated (the gateway's choice among those it speaks), once it is known.
    'mcp.protocol.version': s.protocolVersion || undefined,
    // A string id is the client's and may be as long as its body: left off past MAX_NAME.
    'jsonrpc.request.id': loggableName(String(m.id)),
    'gen_ai.tool.name': method === 'tools/call' ? name : undefined,
    'gen_ai.operation.name': method === 'tools/call' ? 'execute_tool' : undefined,
    'gen_ai.prompt.name': method === 'prompts/get' ? name : undefined,
    'mcp.resource.uri': method === 'resources/read' ? loggableName(params?.uri, MAX_LOGGED_URI) : undefined,
  });
}

type Params = Record<string, unknown> | undefined;

/** A target request in a CLIENT span, whose context rides in `params._meta`; as it is without one. */
export async function targetRequestSpan(spans: PluginSpans, target: string, method: string, params: Params, send: (params: Params) => Promise<RpcMessage>): Promise<RpcMessage> {
  const name = methodName(method);
  const span = spans.start(name, 'client', {
    'mcp.method.name': name,
    'rpc.method_original': name === OTHER ? loggableName(method) : undefined,
    'mcp.target': target,
    'gen_ai.tool.name': method === 'tools/call' ? loggableName(params?.name) : undefined,
  });
  if (span === undefined) return send(params);
  const meta: Record<string, unknown> = { ...(params?._meta as Record<string, unknown> | undefined) };
  span.inject(meta);
  try {
    const answer = await span.run(() => send({ ...params, _meta: meta }));
    span.end(answer.error ? String(answer.error.code) : undefined);
    return answer;
  } catch (err) {
    span.end(err);
    throw err;
  }
}
