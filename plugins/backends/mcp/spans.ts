import type { PluginSpan, PluginSpans } from 'switchyard/sdk';
import type { RpcMessage } from './jsonrpc.ts';

/** Traces of the MCP backend (OpenTelemetry MCP conventions), when the gateway traces. */

/**
 * The span of a client's JSON-RPC method: `tools/call get_weather`. `sessionId`: the gateway session's identity
 * (stable across re-sealing and replicas), not the sealed `Mcp-Session-Id` token, which resumes the session.
 */
export function methodSpan(spans: PluginSpans, m: RpcMessage, sessionId: string | undefined): PluginSpan | undefined {
  const method = m.method!;
  const params = m.params as Record<string, unknown> | undefined;
  const name = method === 'tools/call' || method === 'prompts/get' ? params?.name : undefined;
  return spans.start(typeof name === 'string' ? `${method} ${name}` : method, 'server', {
    'mcp.method.name': method,
    'mcp.session.id': sessionId,
    'jsonrpc.request.id': String(m.id),
    'gen_ai.tool.name': method === 'tools/call' && typeof name === 'string' ? name : undefined,
    'gen_ai.operation.name': method === 'tools/call' ? 'execute_tool' : undefined,
    'gen_ai.prompt.name': method === 'prompts/get' && typeof name === 'string' ? name : undefined,
    'mcp.resource.uri': method === 'resources/read' && typeof params?.uri === 'string' ? params.uri : undefined,
  });
}

type Params = Record<string, unknown> | undefined;

/** A target request in a CLIENT span, whose context rides in `params._meta`; as it is without one. */
export async function targetRequestSpan(spans: PluginSpans, target: string, method: string, params: Params, send: (params: Params) => Promise<RpcMessage>): Promise<RpcMessage> {
  const span = spans.start(method, 'client', {
    'mcp.method.name': method,
    'mcp.target': target,
    'gen_ai.tool.name': method === 'tools/call' && typeof params?.name === 'string' ? params.name : undefined,
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
