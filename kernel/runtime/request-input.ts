// Request input node:http's parser (llhttp) lets through but the gateway refuses (ADR 0092, docs/security.md
// "HTTP/1.1 input"): transfer codings other than chunked, Transfer-Encoding on an HTTP/1.0 request, a fragment in
// the request target, and an h2c upgrade. A lean server side must refuse the same (test/e2e/http1-*.test.ts).
import type { IncomingMessage } from 'node:http';

/** 501: a transfer coding the gateway cannot apply to what it forwards (RFC 9112 §6.1). */
export const UNSUPPORTED_CODING = 'only the chunked transfer coding is supported';
const HTTP10_CODING = 'Transfer-Encoding on a request that is not HTTP/1.1 (faulty framing, RFC 9112 §6.1)';
const FRAGMENT = 'the request target contains a fragment (`#`)';
/** 405: CONNECT, over HTTP/2 (ADR 0158) or HTTP/1.1 (ADR 0166); the gateway opens no tunnels. */
export const CONNECT_REFUSED = 'CONNECT is not served: the gateway opens no tunnels';

/** 400: no reliable body length (RFC 9112 §6.3: chunked must be the last coding of a request). */
const NOT_CHUNKED_LAST = 'chunked is not the last transfer coding (RFC 9112 §6.3)';
const CHUNKED_TWICE = 'chunked is applied more than once (RFC 9112 §7.1)';

/**
 * Why the request's framing or target is refused, or undefined. Decided on the head, before anything goes upstream
 * (llhttp finds a Transfer-Encoding without chunked last only when it reads the body, after the request was
 * dispatched). llhttp already refuses Content-Length beside Transfer-Encoding and Transfer-Encoding twice. A coding
 * before chunked (`gzip, chunked`) is refused too: de-chunked and forwarded without it, the upstream would read the
 * body wrongly.
 */
export function requestInputProblem(req: IncomingMessage): string | undefined {
  // `#` never belongs in a request target (RFC 9112 §3.2): a route matched on `/admin#x` is not the route of
  // `/admin`, which is what many upstreams serve for it (Envoy refuses it too).
  if (req.url !== undefined && req.url.indexOf('#') !== -1) return FRAGMENT;
  const te = req.headers['transfer-encoding'];
  if (te === undefined) return undefined;
  // HTTP/2: the pipeline's own `chunked` for a body of undeclared length (h2-messages.ts; nghttp2 refuses the client's).
  if (req.httpVersionMajor === 2) return undefined;
  if (req.httpVersionMajor !== 1 || req.httpVersionMinor !== 1) return HTTP10_CODING;
  if (te === 'chunked') return undefined;
  let last = '';
  let before = '';
  for (const member of te.split(',')) {
    const coding = member.trim().toLowerCase();
    if (coding === '') continue;
    if (last !== '') before = last;
    if (last === 'chunked') return CHUNKED_TWICE;
    last = coding;
  }
  if (last !== 'chunked') return NOT_CHUNKED_LAST;
  return before === '' ? undefined : UNSUPPORTED_CODING;
}

/**
 * Set on a connection whose current answer closes it: `true` after a refusal (requests read behind it never run, RFC
 * 9112 §9.6), or the declined upgrade request (answered, then the connection closes: node:http reads nothing more
 * after a declined upgrade, so a request pipelined behind it would wait for ever).
 */
export const kClosing = Symbol('switchyard.closing');
export type ClosingSocket = IncomingMessage['socket'] & { [kClosing]?: true | IncomingMessage };

/**
 * node:http `shouldUpgradeCallback` (ADR 0092). Served as a plain request instead, its Upgrade, HTTP2-Settings and
 * Connection dropped as hop-by-hop, and the connection closed after the answer:
 * - `Upgrade: h2c`: relayed, an accepted h2c upgrade is a tunnel in which the client speaks HTTP/2 to the upstream
 *   past every route and policy ("h2c smuggling"; Envoy strips it too);
 * - an upgrade request with a body: node:http would take the body for the upgraded protocol's first bytes, while the
 *   upstream is told a Content-Length it never gets (and waits).
 */
export function shouldUpgrade(req: IncomingMessage): boolean {
  const h = req.headers;
  const upgrade = h.upgrade;
  if (upgrade === undefined) return false;
  const withBody = (h['content-length'] !== undefined && h['content-length'] !== '0') || h['transfer-encoding'] !== undefined;
  if (!withBody && !/(?:^|,)\s*h2c\s*(?:,|$)/i.test(upgrade)) return true;
  (req.socket as ClosingSocket)[kClosing] = req;
  return false;
}
