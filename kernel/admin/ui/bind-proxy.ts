import type { ServerResponse } from 'node:http';
import { Readable } from 'node:stream';

/** Request headers the playgrounds may set: what an MCP or OpenAI-style client sends. */
const REQUEST_HEADERS = ['content-type', 'accept', 'authorization', 'mcp-session-id', 'mcp-protocol-version', 'x-api-key'];
/** Response headers handed back to the page. */
const RESPONSE_HEADERS = ['content-type', 'mcp-session-id', 'mcp-protocol-version', 'cache-control'];

function fail(res: ServerResponse, status: number, message: string): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(`${JSON.stringify({ error: { message } })}\n`);
}

/** The ports of the live config's binds (`/config_dump` shape). */
function bindPorts(dump: unknown): Set<number> {
  const binds = ((dump as { config?: { binds?: unknown } })?.config?.binds ?? []) as { port?: unknown }[];
  return new Set(Array.isArray(binds) ? binds.map((b) => Number(b.port)).filter((p) => Number.isInteger(p)) : []);
}

/**
 * The playgrounds' call (`POST /ui/api/call`): one HTTP request to a bind of the live config on 127.0.0.1, made as a
 * client would, its answer streamed back (SSE included). Only the gateway's own bind ports can be named, so the
 * admin UI is not a way to reach anything else.
 */
export async function proxyToBind(dump: unknown, call: Record<string, unknown>, res: ServerResponse): Promise<void> {
  const port = Number(call.port);
  const path = String(call.path ?? '');
  const method = String(call.method ?? 'POST').toUpperCase();
  if (!bindPorts(dump).has(port)) return fail(res, 400, `port ${String(call.port)} is not a bind of the live config`);
  if (!path.startsWith('/') || path.startsWith('//')) return fail(res, 400, '`path` must start with one /');
  if (!['GET', 'POST', 'DELETE'].includes(method)) return fail(res, 400, '`method` must be GET, POST or DELETE');
  const given = (call.headers ?? {}) as Record<string, unknown>;
  const headers: Record<string, string> = {};
  for (const name of REQUEST_HEADERS) if (typeof given[name] === 'string') headers[name] = given[name];
  const abort = new AbortController();
  res.on('close', () => abort.abort());
  let upstream: Response;
  try {
    upstream = await fetch(`http://127.0.0.1:${port}${path}`, {
      method,
      headers,
      body: method === 'POST' && typeof call.body === 'string' ? call.body : undefined,
      signal: abort.signal,
      redirect: 'manual',
    });
  } catch (err) {
    return fail(res, 502, `the gateway did not answer: ${(err as Error).message}`);
  }
  const out: Record<string, string> = { 'x-switchyard-status': String(upstream.status) };
  for (const name of RESPONSE_HEADERS) {
    const v = upstream.headers.get(name);
    if (v !== null) out[name] = v;
  }
  res.writeHead(upstream.status, out);
  if (!upstream.body) return void res.end();
  Readable.fromWeb(upstream.body as import('node:stream/web').ReadableStream).on('error', () => res.destroy()).pipe(res);
}
