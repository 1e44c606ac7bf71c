import type { IncomingHttpHeaders } from 'node:http';

/** Headers that describe one connection, never forwarded (RFC 9110 §7.6.1). */
const HOP_BY_HOP = ['connection', 'keep-alive', 'proxy-connection', 'proxy-authenticate', 'transfer-encoding', 'te', 'trailer', 'upgrade', 'http2-settings'];

/**
 * Remove hop-by-hop headers in place, including any named in `Connection`. With `keepUpgrade`, `Connection`
 * and `Upgrade` survive (a WebSocket handshake needs them).
 */
export function stripHopByHop(headers: IncomingHttpHeaders | Record<string, unknown>, keepUpgrade = false): void {
  const connection = headers.connection;
  if (connection !== undefined) {
    const listed = Array.isArray(connection) ? connection.join(',') : String(connection);
    for (const token of listed.split(',')) {
      const name = token.trim().toLowerCase();
      if (name && !(keepUpgrade && name === 'upgrade')) delete headers[name];
    }
  }
  for (const name of HOP_BY_HOP) {
    if (keepUpgrade && (name === 'connection' || name === 'upgrade')) continue;
    if (headers[name] !== undefined) delete headers[name];
  }
}
