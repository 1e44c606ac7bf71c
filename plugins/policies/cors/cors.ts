import { headerListGet, headerListHas, headerListSet, localReply, parseDuration } from 'switchyard/sdk';
import type { CompileContext, HeaderMap, PolicyInstance } from 'switchyard/sdk';
import { CORS_ALLOWED_ORIGIN } from '../../lib/cors/allowed-origin.ts';
import { compileOriginTest } from './origin-matcher.ts';

export interface CorsConfig {
  allowOrigins?: string[];
  allowHeaders?: string[];
  exposeHeaders?: string[];
  allowMethods?: string[];
  allowCredentials?: boolean;
  maxAge?: string;
}

/** Compile one `cors` policy: the origin test and the header values, computed once per config load. */
export function compileCors(config: CorsConfig, ctx: CompileContext): PolicyInstance {
  const allowOrigins = config.allowOrigins ?? [];
  const originTest = compileOriginTest(allowOrigins);
  if (typeof originTest === 'string') return ctx.fail(originTest, ['allowOrigins']);
  // The origins the route names itself: `*` lets any page read responses, but does not vouch for the page, so it
  // must not lift a backend's own Origin check (the MCP DNS-rebinding protection, ADR 0010 and 0018).
  const listedTest = allowOrigins.includes('*') ? (compileOriginTest(allowOrigins.filter((o) => o !== '*')) as (origin: string) => boolean) : originTest;
  const credentials = config.allowCredentials === true;
  const methods = config.allowMethods ?? [];
  const headers = config.allowHeaders ?? [];
  const wildcardMethods = methods.includes('*');
  const wildcardHeaders = headers.includes('*');
  const methodList = methods.join(',');
  const headerList = headers.join(',');
  const exposeList = (config.exposeHeaders ?? []).join(',');
  const maxAge = config.maxAge !== undefined ? String(Math.floor(parseDuration(config.maxAge)! / 1000)) : undefined;

  return {
    onRequest(ex) {
      const origin = ex.headers.origin;
      if (origin === undefined) return;
      const allowed = originTest(origin);
      if (ex.method === 'OPTIONS') {
        const requestMethod = ex.headers['access-control-request-method'];
        if (!allowed) {
          // A refused preflight gets no CORS headers, so the browser blocks the call; the backend never sees it.
          return requestMethod ? localReply(200, null, {}) : undefined;
        }
        const reply: HeaderMap = { 'access-control-allow-origin': origin, vary: 'Origin' };
        if (wildcardMethods) reply['access-control-allow-methods'] = credentials ? String(requestMethod ?? '*') : '*';
        else if (methodList) reply['access-control-allow-methods'] = methodList;
        if (wildcardHeaders) {
          const asked = ex.headers['access-control-request-headers'];
          reply['access-control-allow-headers'] = credentials ? String(asked ?? '*') : '*';
        } else if (headerList) reply['access-control-allow-headers'] = headerList;
        if (maxAge !== undefined) reply['access-control-max-age'] = maxAge;
        if (credentials) reply['access-control-allow-credentials'] = 'true';
        if (exposeList) reply['access-control-expose-headers'] = exposeList;
        return localReply(200, null, reply);
      }
      if (!allowed) return;
      // Tells backends that check Origin themselves (the mcp backend, ADR 0010) that this route lists the origin.
      if (listedTest(origin)) ex.set(CORS_ALLOWED_ORIGIN, origin);
      ex.queueResponseHeader('access-control-allow-origin', origin);
      if (credentials) ex.queueResponseHeader('access-control-allow-credentials', 'true');
      if (exposeList) ex.queueResponseHeader('access-control-expose-headers', exposeList);
    },
    onResponse(ex, reply) {
      // The allowed origin is echoed, so caches must key on Origin.
      if (ex.headers.origin === undefined || reply.headers['access-control-allow-origin'] !== undefined) return;
      const vary = reply.headers.vary;
      if (vary === undefined) reply.headers.vary = 'Origin';
      else if (!/\borigin\b/i.test(String(vary))) reply.headers.vary = `${String(vary)}, Origin`;
    },
    // The same on an answer forwarded straight through (ADR 0071).
    onResponseHeaders(ex, _status, list) {
      if (ex.headers.origin === undefined || headerListHas(list, 'access-control-allow-origin')) return;
      const vary = headerListGet(list, 'vary');
      if (vary === undefined) list.push('vary', 'Origin');
      else if (!/\borigin\b/i.test(String(vary))) headerListSet(list, 'vary', `${String(vary)}, Origin`);
    },
  };
}
