/**
 * The gateway's own origin as the client reached it (ADR 0014's trust model applied to X-Forwarded-Proto/-Host and
 * `Forwarded`): what plugins put in URLs they advertise (agent cards, OAuth metadata). Only a trusted proxy may say
 * the client used another scheme or host; from any other peer those headers are ignored, or a client could make the
 * gateway advertise a URL of its choosing.
 */
import { plainAddress } from '../exchange/client-address.ts';

/** `name[:port]` or `[v6][:port]`: nothing that could end a URL's authority or a quoted header parameter. */
const AUTHORITY = /^(?:[A-Za-z0-9._~-]+|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/;

/** The first element of a comma-separated header value, trimmed. */
function firstElement(value: string): string {
  const comma = value.indexOf(',');
  return (comma === -1 ? value : value.slice(0, comma)).trim();
}

function scheme(value: string | undefined): 'http' | 'https' | undefined {
  const v = value?.toLowerCase();
  return v === 'http' || v === 'https' ? v : undefined;
}

function authority(value: string | undefined): string | undefined {
  return value !== undefined && AUTHORITY.test(value) ? value : undefined;
}

/** A parameter (`proto`, `host`) of the first element of an RFC 7239 `Forwarded` value, unquoted. */
function forwardedParam(value: string, name: string): string | undefined {
  for (const pair of firstElement(value).split(';')) {
    const eq = pair.indexOf('=');
    if (eq === -1 || pair.slice(0, eq).trim().toLowerCase() !== name) continue;
    const v = pair.slice(eq + 1).trim();
    return v.length >= 2 && v.startsWith('"') && v.endsWith('"') ? v.slice(1, -1) : v;
  }
  return undefined;
}

/**
 * `scheme://host[:port]` for a request: the listener's scheme and the client's Host, or, when `trusted` (the peer is
 * in `config.trustedProxies`), the first `X-Forwarded-Proto`/`X-Forwarded-Host` value, else the first `Forwarded`
 * element's `proto=`/`host=`. Malformed forwarded values are ignored. Reads `rawHeaders`: the header object is
 * what goes upstream and the proxy overwrites X-Forwarded-* and Host in it.
 */
export function externalOrigin(rawHeaders: readonly string[], trusted: boolean, listenerScheme: 'http' | 'https', fallbackHost: string): string {
  let host: string | undefined;
  let xfProto: string | undefined;
  let xfHost: string | undefined;
  let forwarded: string | undefined;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!;
    // Length first: most headers are skipped without lower-casing.
    if (name.length === 4) {
      if (host === undefined && name.toLowerCase() === 'host') host = rawHeaders[i + 1];
    } else if (!trusted) continue;
    else if (name.length === 17 && xfProto === undefined && name.toLowerCase() === 'x-forwarded-proto') xfProto = firstElement(rawHeaders[i + 1]!);
    else if (name.length === 16 && xfHost === undefined && name.toLowerCase() === 'x-forwarded-host') xfHost = firstElement(rawHeaders[i + 1]!);
    else if (name.length === 9 && forwarded === undefined && name.toLowerCase() === 'forwarded') forwarded = rawHeaders[i + 1];
  }
  let s: 'http' | 'https' = listenerScheme;
  let h = host || fallbackHost;
  if (trusted) {
    s = scheme(xfProto) ?? (forwarded === undefined ? undefined : scheme(forwardedParam(forwarded, 'proto'))) ?? s;
    h = authority(xfHost) ?? (forwarded === undefined ? undefined : authority(forwardedParam(forwarded, 'host'))) ?? h;
  }
  return `${s}://${h}`;
}

/**
 * The address a client reached, as an authority (`127.0.0.1:8080`, `[::1]:8080`): the origin of a request that named
 * no host (HTTP/1.0 without `Host`, an empty one), where `scheme://` alone would make every advertised URL wrong.
 */
export function localAuthority(socket: { readonly localAddress?: string; readonly localPort?: number }): string {
  // A dual-stack bind reports an IPv4 client's address IPv4-mapped; clients know it as the IPv4 address.
  const address = plainAddress(socket.localAddress ?? '127.0.0.1');
  const host = address.includes(':') ? `[${address}]` : address;
  return socket.localPort === undefined ? host : `${host}:${socket.localPort}`;
}
