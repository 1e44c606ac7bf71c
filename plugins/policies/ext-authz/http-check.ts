import { celValueToString, discardBody, jsonErrorReply, readCapped } from 'switchyard/sdk';
import type { CompiledExpression, Exchange, HeaderMap, Reply, UpstreamTarget } from 'switchyard/sdk';
import { applyHeaderModifier } from '../../lib/header-modifier/header-modifier.ts';
import { denialReply } from './grpc-check.ts';
import type { HeaderModifier } from '../../lib/header-modifier/header-modifier.ts';

/** Bodies of denying answers are read into memory (bounded) before they are passed on. */
const MAX_DENIAL_BODY = 1024 * 1024;

/** Response headers never copied from the service's answer: connection-level, or recomputed by the gateway. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'te', 'trailer', 'content-length']);

export interface HttpCheckOptions {
  readonly target: UpstreamTarget;
  /** `policies.requestHeaderModifier`: applied to the headers of every check request. */
  readonly headers: HeaderModifier | undefined;
  /** CEL yielding the path to call; undefined: the request's own path and query. */
  readonly path: CompiledExpression | undefined;
  /** Lower-case names of request headers sent besides `authorization`. */
  readonly includeRequestHeaders: readonly string[];
  /** Lower-case names of headers of a 2xx answer copied onto the upstream request. */
  readonly includeResponseHeaders: readonly string[];
  readonly timeoutMs: number;
}

/**
 * The HTTP variant (BEHAVIOUR.md §5.6): the client's method, to the CEL path (or the request's path and query),
 * with only `Authorization` and `includeRequestHeaders`. 2xx allows; any other answer goes back to the client as
 * it is. Throws when the service cannot be reached or times out.
 */
export async function httpCheck(options: HttpCheckOptions, ex: Exchange): Promise<Reply | undefined> {
  let path = ex.path + ex.query;
  if (options.path) {
    path = celValueToString(options.path.evaluate(ex));
    if (!path.startsWith('/')) path = `/${path}`;
  }
  const headers: HeaderMap = {};
  const auth = ex.headers.authorization;
  if (auth !== undefined) headers.authorization = auth;
  for (const name of options.includeRequestHeaders) {
    const value = ex.headers[name];
    if (value !== undefined) headers[name] = value;
  }
  if (options.headers) applyHeaderModifier(options.headers, headers);
  const res = await options.target.request({ method: ex.method, path, headers, signal: ex.signal, timeoutMs: options.timeoutMs });
  if (res.status >= 200 && res.status < 300) {
    discardBody(res.body);
    for (const name of options.includeResponseHeaders) {
      const value = res.headers[name];
      // The service decides these headers: one its answer does not set is not the client's to set either (a client's
      // `x-user-id: admin` would otherwise pass as the service's word). Blanked, not deleted, as credentials are.
      if (value !== undefined) ex.headers[name] = value;
      else if (ex.headers[name] !== undefined) ex.headers[name] = undefined;
    }
    return undefined;
  }
  const out: HeaderMap = {};
  for (const [name, value] of Object.entries(res.headers)) if (value !== undefined && !HOP_BY_HOP.has(name)) out[name] = value;
  let body: Buffer;
  try {
    body = await readCapped(res.body, MAX_DENIAL_BODY, { tooLarge: (n) => new Error(`the body is larger than ${n} bytes`) });
  } catch {
    // The status is the service's decision: a body that cannot be read whole (too large, stalled past the timeout,
    // cut off) loses the body, never the denial, so `failureMode: allow` cannot turn it into an allow.
    return bodylessDenial(res.status, out);
  }
  return denialReply(res.status, body, out);
}

/**
 * The service's denial without its body: its status and headers (less those that described the body), with the
 * gateway's JSON error as body for an error status, or none for a redirect.
 */
function bodylessDenial(status: number, headers: HeaderMap): Reply {
  for (const name of ['content-type', 'content-encoding', 'content-language', 'content-range', 'etag']) delete headers[name];
  if (status < 400) return denialReply(status, '', headers);
  return jsonErrorReply(status, status === 401 ? 'authentication_failed' : 'forbidden', 'denied by external authorization', headers);
}
