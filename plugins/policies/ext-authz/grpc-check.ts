import { jsonErrorReply, localReply, relayedErrorReply } from 'switchyard/sdk';
import type { Exchange, HeaderMap, Reply } from 'switchyard/sdk';
import { serviceHeader, unaryCall } from '../../lib/envoy-grpc/envoy-grpc.ts';
import type { EnvoyClient, HeaderValueOptionMessage } from '../../lib/envoy-grpc/envoy-grpc.ts';
import { applyHeaderOption, removeHeaders } from './header-mutation.ts';

/** `CheckResponse` as decoded by the loader (enums as numbers, unset messages null). */
interface CheckResponse {
  status: { code: number; message: string } | null;
  http_response?: 'denied_response' | 'ok_response';
  denied_response: { status: { code: number } | null; headers: HeaderValueOptionMessage[]; body: string } | null;
  ok_response: {
    headers: HeaderValueOptionMessage[];
    headers_to_remove: string[];
    response_headers_to_add: HeaderValueOptionMessage[];
    query_parameters_to_set: { key: string; value: string }[];
    query_parameters_to_remove: string[];
  } | null;
}

function socketAddress(address: string | undefined, port: number | undefined): unknown {
  const a = address ?? '';
  return { address: { socket_address: { address: a.startsWith('::ffff:') && a.includes('.') ? a.slice(7) : a, port_value: port ?? 0 } } };
}

/** The `CheckRequest` of one exchange (AttributeContext: source, destination, request.http with every header). */
export function checkRequest(ex: Exchange, context: Record<string, string>): unknown {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(ex.headers)) if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(',') : value;
  const pathAndQuery = ex.path + ex.query;
  const authority = typeof ex.headers.host === 'string' ? ex.headers.host : ex.authority;
  // Envoy also reports the HTTP/2-style pseudo headers; servers written for Envoy read them.
  headers[':authority'] = authority;
  headers[':method'] = ex.method;
  headers[':path'] = pathAndQuery;
  headers[':scheme'] = ex.scheme;
  const now = Date.now();
  const length = ex.headers['content-length'];
  const socket = ex.req.socket;
  return {
    attributes: {
      source: socketAddress(ex.sourceAddress, ex.sourcePort),
      destination: socketAddress(socket.localAddress, socket.localPort),
      request: {
        time: { seconds: String(Math.floor(now / 1000)), nanos: (now % 1000) * 1e6 },
        http: {
          method: ex.method,
          headers,
          path: pathAndQuery,
          host: authority,
          scheme: ex.scheme,
          query: ex.query.length > 1 ? ex.query.slice(1) : '',
          protocol: `HTTP/${ex.req.httpVersion}`,
          size: length !== undefined && /^\d+$/.test(length) ? length : '-1',
        },
      },
      context_extensions: context,
    },
  };
}

function applyQuery(ex: Exchange, set: readonly { key: string; value: string }[], remove: readonly string[]): void {
  if (set.length === 0 && remove.length === 0) return;
  const params = new URLSearchParams(ex.query.length > 1 ? ex.query.slice(1) : '');
  for (const name of remove) params.delete(name);
  for (const { key, value } of set) params.set(key, value);
  const text = params.toString();
  ex.query = text ? `?${text}` : '';
}

/**
 * The service's denial, passed on as it made it. An error status is tagged as an error, so on an LLM route the client
 * gets its API's error shape (DECIDED 4) with the service's text as message; a redirect (to a login page) stays as is.
 */
export function denialReply(status: number, body: Uint8Array | string, headers: HeaderMap): Reply {
  if (status < 400) return localReply(status, body, headers);
  return relayedErrorReply(status, body, headers, status === 401 ? 'authentication_failed' : 'forbidden', 'denied by external authorization');
}

/** Ask the service; undefined allows (with the service's header changes applied), a Reply denies. Throws on failure. */
export async function grpcCheck(client: EnvoyClient, ex: Exchange, context: Record<string, string>, timeoutMs: number): Promise<Reply | undefined> {
  const res = await unaryCall<CheckResponse>(client, 'Check', checkRequest(ex, context), timeoutMs, ex.signal);
  if ((res.status?.code ?? 0) === 0) {
    const ok = res.ok_response;
    if (ok) {
      const headers = ex.headers as HeaderMap;
      for (const option of ok.headers) applyHeaderOption(headers, option);
      removeHeaders(headers, ok.headers_to_remove);
      for (const option of ok.response_headers_to_add) {
        const header = option.header?.key ? serviceHeader(option.header) : undefined;
        if (header !== undefined) ex.queueResponseHeader(header[0], header[1]);
      }
      applyQuery(ex, ok.query_parameters_to_set, ok.query_parameters_to_remove);
    }
    return undefined;
  }
  const denied = res.denied_response;
  if (!denied) return jsonErrorReply(403, 'forbidden', 'denied by external authorization');
  const headers: HeaderMap = {};
  for (const option of denied.headers) applyHeaderOption(headers, option);
  // Envoy: 403 unless the service chose a status.
  const status = denied.status && denied.status.code >= 200 && denied.status.code <= 599 ? denied.status.code : 403;
  return denialReply(status, denied.body, headers);
}
