import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AdminRouteHandler, Logger } from '../sdk/index.ts';
import { readAdminBody } from './admin-body.ts';
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE']);

/** The plugin handler serving `path` (`/keys/vk_1/rotate` under `/keys`), and the path below its prefix. */
export function findPluginRoute(lookup: ((prefix: string) => AdminRouteHandler | undefined) | undefined, path: string): { handler: AdminRouteHandler; subpath: string } | undefined {
  if (!lookup) return undefined;
  const slash = path.indexOf('/', 1);
  const prefix = slash === -1 ? path : path.slice(0, slash);
  const handler = lookup(prefix);
  return handler ? { handler, subpath: slash === -1 ? '' : path.slice(slash) } : undefined;
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' }).end(`${JSON.stringify(body, null, 2)}\n`);
}

/**
 * Serve one request to a plugin's admin endpoint: read and parse a JSON body (only `application/json` is taken, so a
 * cross-site form post cannot reach the handler), call it, write its answer as JSON. Errors come back as
 * `{"error": {"message"}}`.
 */
export async function servePluginRoute(req: IncomingMessage, res: ServerResponse, route: { handler: AdminRouteHandler; subpath: string }, logger: Logger): Promise<void> {
  const method = req.method ?? 'GET';
  if (!METHODS.has(method)) return json(res, 405, { error: { message: `method ${method} not allowed` } });
  let body: unknown;
  try {
    const raw = method === 'GET' || method === 'HEAD' ? Buffer.alloc(0) : await readAdminBody(req);
    if (raw.length > 0) {
      const type = String(req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
      if (type !== 'application/json') return json(res, 415, { error: { message: 'the body must be JSON (content-type: application/json)' } });
      body = JSON.parse(raw.toString('utf8')) as unknown;
    }
  } catch (err) {
    return json(res, err instanceof RangeError ? 413 : 400, { error: { message: err instanceof RangeError ? 'body too large' : `invalid JSON body: ${(err as Error).message}` } });
  }
  const url = new URL(req.url ?? '/', 'http://admin');
  let subpath: string;
  try {
    const segments = route.subpath.split('/').map(decodeURIComponent);
    // An encoded `/` would become a separator here: `/keys/a%2Frevoke` must not read as `/keys/a/revoke`.
    if (segments.some((s) => s.includes('/'))) return json(res, 400, { error: { message: 'malformed path: a path segment holds an encoded `/` (%2F)' } });
    subpath = segments.join('/');
  } catch {
    return json(res, 400, { error: { message: 'malformed path' } });
  }
  try {
    const answer = await route.handler({ method: method === 'HEAD' ? 'GET' : method, subpath, query: url.searchParams, body });
    json(res, answer.status, answer.body);
  } catch (err) {
    logger.error('admin endpoint failed', { path: url.pathname, error: err as Error });
    if (!res.headersSent) json(res, 500, { error: { message: 'internal error' } });
    else res.end();
  }
}
