/**
 * The request's host name for listener and route selection (docs/adr/0014-hosts-and-forwarding-headers.md):
 * lower-cased, without port, without one trailing dot. A malformed or repeated `Host` is refused (400), so a
 * request cannot reach a listener other than the one its host name selects.
 */

/** Why a Host header was refused. Preallocated. */
export class HostRejection {
  readonly message: string;
  constructor(message: string) {
    this.message = message;
  }
}

const MALFORMED = new HostRejection('malformed Host header');
const DUPLICATE = new HostRejection('more than one Host header');

const DOT = 46;
const COLON = 58;

/** Host name characters: letters, digits, `-`, `_` (seen in internal names), `.`. */
function isNameChar(c: number): boolean {
  return (c >= 97 && c <= 122) || (c >= 48 && c <= 57) || c === 45 || c === DOT || c === 95 || (c >= 65 && c <= 90);
}

/**
 * The port after `host[from - 1]` (a `:`): digits only, 1-65535. An empty port (`h:`) is allowed, as RFC 3986 §3.2.3
 * allows it (the scheme's default port); port 0 and anything past 65535 are not (ADR 0117).
 */
function isPort(host: string, from: number): boolean {
  const len = host.length;
  if (len - from > 5) return false;
  let port = 0;
  for (let i = from; i < len; i++) {
    const c = host.charCodeAt(i);
    if (c < 48 || c > 57) return false;
    port = port * 10 + (c - 48);
  }
  return len === from || (port >= 1 && port <= 65535);
}

/**
 * Normalised host name of a Host header value (`Secure.Example.:8080` -> `secure.example`, `[::1]:80` -> `::1`), or
 * why it is malformed. `undefined` (HTTP/1.0 without Host) and the empty value give the empty name.
 */
export function normalizeHost(host: string | undefined): string | HostRejection {
  if (host === undefined || host === '') return '';
  const len = host.length;
  if (host.charCodeAt(0) === 91 /* [ */) {
    const close = host.indexOf(']');
    if (close < 3) return MALFORMED;
    for (let i = 1; i < close; i++) {
      const c = host.charCodeAt(i);
      // IPv6 (or IPvFuture-free) literal: hex digits, `:` and `.` (embedded IPv4).
      if (!((c >= 48 && c <= 58) || (c >= 97 && c <= 102) || (c >= 65 && c <= 70) || c === DOT)) return MALFORMED;
    }
    if (close + 1 !== len && (host.charCodeAt(close + 1) !== COLON || !isPort(host, close + 2))) return MALFORMED;
    return host.slice(1, close).toLowerCase();
  }
  let end = len;
  let upper = false;
  let prev = DOT; // a leading dot is an empty label
  for (let i = 0; i < len; i++) {
    const c = host.charCodeAt(i);
    if (c === COLON) {
      if (!isPort(host, i + 1)) return MALFORMED;
      end = i;
      break;
    }
    if (!isNameChar(c)) return MALFORMED;
    if (c === DOT && prev === DOT) return MALFORMED;
    if (c >= 65 && c <= 90) upper = true;
    prev = c;
  }
  if (end === 0) return MALFORMED;
  // One trailing dot (the absolute form of a DNS name) names the same host.
  const name = prev === DOT ? host.slice(0, end - 1) : end === len ? host : host.slice(0, end);
  if (name === '') return MALFORMED;
  return upper ? name.toLowerCase() : name;
}

/** `normalizeHost` of the request, refusing a second Host header (node:http keeps only the first). */
export function requestHostname(headers: { host?: string }, rawHeaders: readonly string[]): string | HostRejection {
  let seen = 0;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!;
    if (name.length === 4 && (name === 'Host' || name === 'host' || name.toLowerCase() === 'host') && ++seen > 1) return DUPLICATE;
  }
  return normalizeHost(headers.host);
}
