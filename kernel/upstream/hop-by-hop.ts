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
 * Blank hop-by-hop request headers (and any named in `Connection`) by setting them to `undefined`, which undici
 * skips. Blanking instead of `delete` keeps Node's header object in its fast shape on the hot path.
 */
export function blankHopByHop(headers: IncomingHttpHeaders): void {
  const listed = connectionListed(headers.connection);
  if (listed) for (const name of listed) if (headers[name] !== undefined) headers[name] = undefined;
  for (const name in headers) if (HOP_BY_HOP.has(name) && headers[name] !== undefined) headers[name] = undefined;
}

/**
 * Remove hop-by-hop headers in place, including any named in `Connection`. With `keepUpgrade`, `Connection`
 * and `Upgrade` survive (a WebSocket handshake needs them). For the upgrade path, where headers are copied anyway.
 */
export function stripHopByHop(headers: IncomingHttpHeaders | Record<string, unknown>, keepUpgrade = false): void {
  const listed = connectionListed(headers.connection);
  if (listed) for (const name of listed) if (!(keepUpgrade && name === 'upgrade')) delete headers[name];
  for (const name of HOP_BY_HOP) {
    if (keepUpgrade && (name === 'connection' || name === 'upgrade')) continue;
    if (headers[name] !== undefined) delete headers[name];
  }
}
