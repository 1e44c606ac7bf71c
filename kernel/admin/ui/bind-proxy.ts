import type { IncomingMessage, ServerResponse } from 'node:http';

/** Request headers the playgrounds may set: what an MCP or OpenAI-style client sends. */
const REQUEST_HEADERS = ['content-type', 'accept', 'authorization', 'mcp-session-id', 'mcp-protocol-version', 'x-api-key'];
/** Response headers handed back to the page. */
const RESPONSE_HEADERS = ['content-type', 'mcp-session-id', 'mcp-protocol-version', 'cache-control'];

const WILDCARD = new Set(['0.0.0.0', '::', '[::]']);

function fail(res: ServerResponse, status: number, message: string): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(`${JSON.stringify({ error: { message } })}\n`);
}

interface DumpListener {
  name?: unknown;
  hostname?: unknown;
  protocol?: unknown;
}

/**
 * The live config's bind on `port` (`/config_dump` shape): where to connect (its address, or 127.0.0.1 when it
 * listens on every interface) and its listeners; undefined when no bind has that port.
 */
function bindOf(dump: unknown, port: number): { address: string; listeners: DumpListener[] } | undefined {
  const binds = (dump as { config?: { binds?: unknown } })?.config?.binds;
  if (!Array.isArray(binds)) return undefined;
  const bind = (binds as { port?: unknown; address?: unknown; listeners?: unknown }[]).find((b) => Number(b.port) === port);
  if (!bind) return undefined;
  const address = typeof bind.address === 'string' && !WILDCARD.has(bind.address) ? bind.address.replace(/^\[(.*)\]$/, '$1') : '127.0.0.1';
  return { address, listeners: Array.isArray(bind.listeners) ? (bind.listeners as DumpListener[]) : [] };
}

/**
 * The playgrounds' call (`POST /ui/api/call`): one HTTP request to a bind of the live config (on its address, or on
 * 127.0.0.1 when it listens on every interface), made as a client would, its answer streamed back (SSE included). Only the gateway's own bind ports can be named, so the
 * admin UI is not a way to reach anything else. `listener` (a name, or a position in the bind) chooses the listener: its exact `hostname` is
 * sent as Host (and SNI), and an HTTPS listener is called over TLS without checking the certificate, which is the
 * gateway's own on its own address.
 */
export async function proxyToBind(dump: unknown, call: Record<string, unknown>, res: ServerResponse): Promise<void> {
  const port = Number(call.port);
  const path = String(call.path ?? '');
  const method = String(call.method ?? 'POST').toUpperCase();
  const bind = Number.isInteger(port) ? bindOf(dump, port) : undefined;
  if (!bind) return fail(res, 400, `port ${String(call.port)} is not a bind of the live config`);
  const { listeners } = bind;
  if (!path.startsWith('/') || path.startsWith('//')) return fail(res, 400, '`path` must start with one /');
  if (!['GET', 'POST', 'DELETE'].includes(method)) return fail(res, 400, '`method` must be GET, POST or DELETE');
  // A name, or the position in the bind's listeners: a listener need not have a name.
  const listener = call.listener === undefined ? undefined : typeof call.listener === 'number' ? listeners[call.listener] : listeners.find((l) => l.name === call.listener);
  if (call.listener !== undefined && !listener) return fail(res, 400, `bind ${port} has no listener ${JSON.stringify(call.listener)}`);
  const hostname = typeof listener?.hostname === 'string' && !listener.hostname.includes('*') ? listener.hostname : undefined;
  const tls = (listener ?? listeners[0])?.protocol === 'HTTPS';

  const given = (call.headers ?? {}) as Record<string, unknown>;
  const headers: Record<string, string> = { host: hostname ?? `${bind.address.includes(':') ? `[${bind.address}]` : bind.address}:${port}` };
  for (const name of REQUEST_HEADERS) if (typeof given[name] === 'string') headers[name] = given[name];
  const body = method === 'POST' && typeof call.body === 'string' ? call.body : undefined;
  if (body !== undefined) headers['content-length'] = String(Buffer.byteLength(body));
  // node:https only for an HTTPS listener: the admin server does not load TLS otherwise.
  const { request } = process.getBuiltinModule(tls ? 'node:https' : 'node:http') as typeof import('node:https');
  const out = request({ host: bind.address, port, path, method, headers, ...(tls ? { rejectUnauthorized: false } : {}) });
  res.on('close', () => out.destroy());
  out.on('error', (err) => {
    if (!res.headersSent) fail(res, 502, `the gateway did not answer: ${err.message}`);
    else res.destroy();
  });
  out.on('response', (answer: IncomingMessage) => {
    const back: Record<string, string> = { 'x-switchyard-status': String(answer.statusCode) };
    for (const name of RESPONSE_HEADERS) {
      const v = answer.headers[name];
      if (typeof v === 'string') back[name] = v;
    }
    res.writeHead(answer.statusCode ?? 502, back);
    answer.on('error', () => res.destroy()).pipe(res);
  });
  out.end(body);
}
