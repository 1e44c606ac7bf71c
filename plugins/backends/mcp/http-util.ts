import { jsonReply } from 'switchyard/sdk';
import type { Exchange, HeaderMap, Reply } from 'switchyard/sdk';
import { errorMessage } from './jsonrpc.ts';
import type { RpcMessage } from './jsonrpc.ts';
import { NOT_FORWARDED } from '../../lib/mcp/client-headers.ts';

/** Headers that change with every request: not kept by connections shared across a 2026-07-28 client's requests. */
const PER_REQUEST = new Set(['traceparent', 'tracestate', 'baggage', 'x-request-id', 'x-amzn-trace-id', 'x-b3-traceid', 'x-b3-spanid', 'x-b3-parentspanid', 'x-b3-sampled', 'b3']);

/**
 * The client's credentials: with several targets each is another server, and a token the client presented to the
 * gateway's endpoint is not theirs to see (the MCP specification's "token passthrough"). A target that needs it asks
 * with `backendAuth.passthrough` (ADR 0128).
 */
const CLIENT_CREDENTIALS = new Set(['authorization', 'cookie']);

/**
 * The client's headers for the targets' HTTP requests (after gateway auth removed what it consumed). `shared`: for
 * connections that outlive the request (2026-07-28 clients), without the per-request tracing headers. `multiplexed`:
 * the backend has several targets, so the client's credentials stay with the gateway.
 */
export function upstreamHeaders(ex: Exchange, shared = false, multiplexed = false): Record<string, string> | undefined {
  let out: Record<string, string> | undefined;
  for (const [k, v] of Object.entries(ex.headers)) {
    if (v === undefined || NOT_FORWARDED.has(k) || k.startsWith('x-forwarded-') || k.startsWith('mcp-param-')) continue;
    if (shared && PER_REQUEST.has(k)) continue;
    if (multiplexed && CLIENT_CREDENTIALS.has(k)) continue;
    (out ??= {})[k] = Array.isArray(v) ? v.join(', ') : v;
  }
  return out;
}

/** The client as a session's target connections present it: its forwarded headers and a copy of its request. */
export interface ClientContext {
  readonly headers: Readonly<Record<string, string>> | undefined;
  /** The request that opened (or resumed) the session, detached: target policies act for it later. */
  readonly exchange: Exchange;
  /** Headers for connections shared across requests (no per-request tracing headers). */
  readonly shared: boolean;
}

export function clientOf(ex: Exchange, multiplexed: boolean, shared = false): ClientContext {
  return { headers: upstreamHeaders(ex, shared, multiplexed), exchange: ex.detach(), shared };
}

export function header(ex: Exchange, name: string): string | undefined {
  const v = ex.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** A gateway-made JSON-RPC error with an HTTP status (transport-level problems). */
export function rpcReply(status: number, code: number, message: string, id: RpcMessage['id'] = null, headers: HeaderMap = {}, data?: unknown): Reply {
  return jsonReply(status, errorMessage(id, code, message, data), headers);
}

/** Transport-level errors use the SDK's server code for them (-32000), as clients expect. */
export const TRANSPORT_ERROR = -32000;
