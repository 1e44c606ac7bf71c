import type { IncomingHttpHeaders } from 'node:http';

/** Headers that describe one connection, never forwarded (RFC 9110 §7.6.1). */
export const HOP_BY_HOP: ReadonlySet<string> = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'http2-settings',
]);

/**
 * Extra header names a `Connection` header declares hop-by-hop (`Connection: close, x-foo` -> x-foo), or null
 * when it only carries the usual `keep-alive`/`close` (the common case, decided without splitting).
 */
export function connectionListed(connection: unknown): Set<string> | null {
  if (connection === undefined || connection === 'keep-alive' || connection === 'close' || connection === 'Keep-Alive') return null;
  const listed = Array.isArray(connection) ? connection.join(',') : String(connection);
  let names: Set<string> | null = null;
  for (const token of listed.split(',')) {
    const name = token.trim().toLowerCase();
    if (name && name !== 'keep-alive' && name !== 'close') (names ??= new Set()).add(name);
  }
  return names;
}

/**
 * Headers a client's `Connection` cannot name away: those it names that are hop-by-hop anyway (removed when the
 * request is sent; Upgrade must reach an upgrade's upstream, Transfer-Encoding frames the body), and those the gateway
 * reads to route and frame the request.
 */
const NOT_CONNECTION_LISTED: ReadonlySet<string> = new Set([...HOP_BY_HOP, 'host', 'content-length']);

/**
 * Blank the headers the client's `Connection` names (`Connection: close, x-foo` -> x-foo), when its request is received
 * and before any policy runs: they belong to the client's hop. Headers policies add later are never removed by it,
 * as in Envoy (ADR 0117). Callers skip it when `Connection` is absent or only `keep-alive`/`close` (the common case).
 */
export function blankConnectionListed(headers: IncomingHttpHeaders): void {
  const listed = connectionListed(headers.connection);
  if (listed === null) return;
  for (const name of listed) if (!NOT_CONNECTION_LISTED.has(name) && Object.hasOwn(headers, name)) headers[name] = undefined;
}

/**
 * Blank hop-by-hop request headers by setting them to `undefined`, which undici skips. Blanking instead of `delete`
 * keeps Node's header object in its fast shape on the hot path. Only the fixed list: the names the client's
 * `Connection` listed were blanked when the request was received (`blankConnectionListed`), and a `Connection` a
 * policy set names nothing away (ADR 0117).
 */
export function blankHopByHop(headers: IncomingHttpHeaders): void {
  for (const name in headers) if (HOP_BY_HOP.has(name) && headers[name] !== undefined) headers[name] = undefined;
}

/**
 * Remove hop-by-hop headers in place. An answer's: including any its `Connection` names. An upgrade request's
 * (`upgradeRequest`): the fixed list only (as `blankHopByHop`), `Upgrade` kept and `Connection` set to `upgrade`, the
 * one option the handshake needs (as Envoy sends it); the client's own list was dealt with when it was received.
 */
export function stripHopByHop(headers: IncomingHttpHeaders | Record<string, unknown>, upgradeRequest = false): void {
  if (!upgradeRequest) {
    const listed = connectionListed(headers.connection);
    if (listed) for (const name of listed) delete headers[name];
  }
  for (const name of HOP_BY_HOP) {
    if (upgradeRequest && name === 'upgrade') continue;
    if (headers[name] !== undefined) delete headers[name];
  }
  if (upgradeRequest) headers.connection = 'upgrade';
}
