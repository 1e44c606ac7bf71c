import type { PluginSpan, PluginSpans } from 'switchyard/sdk';
import type { RpcMessage } from './jsonrpc.ts';

/** Traces of the MCP backend (OpenTelemetry MCP conventions), when the gateway traces. */

/** Longest client-chosen name (a method, a tool or prompt name) put on a log line or span; MCP names tools in 128. */
const MAX_LOGGED_NAME = 256;
/** Longest resource URI put on a span. */
const MAX_LOGGED_URI = 2048;

/** `value` when it is a string short enough to log: a client's name can be as long as its request body. */
export function loggableName(value: unknown, max = MAX_LOGGED_NAME): string | undefined {
  return typeof value === 'string' && value.length <= max ? value : undefined;
}

/**
 * The span of a client's JSON-RPC method: `tools/call get_weather`. `sessionId`: the gateway session's identity
 * (stable across re-sealing and replicas), not the sealed `Mcp-Session-Id` token, which resumes the session.
 */
export function methodSpan(spans: PluginSpans, m: RpcMessage, sessionId: string | undefined): PluginSpan | undefined {
  const method = loggableName(m.method) ?? 'unknown';
  const params = m.params as Record<string, unknown> | undefined;
  const name = method === 'tools/call' || method === 'prompts/get' ? loggableName(params?.name) : undefined;
  return spans.start(typeof name === 'string' ? `${method} ${name}` : method, 'server', {
    'mcp.method.name': method,
    'mcp.session.id': sessionId,
    'jsonrpc.request.id': String(m.id),
    'gen_ai.tool.name': method === 'tools/call' && typeof name === 'string' ? name : undefined,
    'gen_ai.operation.name': method === 'tools/call' ? 'execute_tool' : undefined,
    'gen_ai.prompt.name': method === 'prompts/get' && typeof name === 'string' ? name : undefined,
    'mcp.resource.uri': method === 'resources/read' ? loggableName(params?.uri, MAX_LOGGED_URI) : undefined,
  });
}

type Params = Record<string, unknown> | undefined;

/** A target request in a CLIENT span, whose context rides in `params._meta`; as it is without one. */
export async function targetRequestSpan(spans: PluginSpans, target: string, method: string, params: Params, send: (params: Params) => Promise<RpcMessage>): Promise<RpcMessage> {
  const span = spans.start(method, 'client', {
    'mcp.method.name': method,
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
