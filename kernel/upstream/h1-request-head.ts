// The request head of the lean upstream client (ADR 0073): one latin1 string, validated as undici validates a
// request (method token, path bytes, header names and values), so nothing a plugin set can split the request.
import type { IncomingHttpHeaders } from 'node:http';

/** A request the lean client refuses to send; `code` as undici's `InvalidArgumentError`. */
export class H1ArgumentError extends Error {
  readonly code = 'UND_ERR_INVALID_ARG';
}

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const BAD_VALUE = /[^\t\x20-\x7e\x80-\xff]/;
const BAD_PATH = /[^\u0021-\u00ff]/;
/** Framing and connection headers the client writes itself (or never), as undici refuses or replaces them. */
const OWN = new Set(['content-length', 'transfer-encoding', 'connection', 'keep-alive', 'upgrade', 'expect', 'te', 'proxy-connection']);
/** tchar (RFC 9110 §5.6.2) by character code. */
const TCHAR = new Uint8Array(128);
for (const c of "!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz") TCHAR[c.charCodeAt(0)] = 1;
const LOWER = 0;
const UPPER = 1;
const BAD = 2;

/**
 * Whether a header name is a token, and whether it has capitals: one character loop instead of a regex and a
 * `toLowerCase` per header (node:http's names are lower case already; only a plugin's may not be).
 */
function nameShape(name: string): number {
  const n = name.length;
  if (n === 0) return BAD;
  let shape = LOWER;
  for (let i = 0; i < n; i++) {
    const c = name.charCodeAt(i);
    if (c >= 128 || TCHAR[c] === 0) return BAD;
    if (c >= 65 && c <= 90) shape = UPPER;
  }
  return shape;
}

const EXPECTS_PAYLOAD = new Set(['PUT', 'POST', 'PATCH', 'QUERY', 'PROPFIND', 'PROPPATCH']);

/**
 * `METHOD path HTTP/1.1` and the headers, without the blank line: the caller adds the framing header. Undefined
 * values are skipped (hop-by-hop headers are blanked that way); the framing headers are the client's own.
 */
export function requestHead(method: string, path: string, headers: IncomingHttpHeaders): string {
  if (!TOKEN.test(method)) throw new H1ArgumentError('invalid request method');
  if (path.length === 0 || BAD_PATH.test(path)) throw new H1ArgumentError('invalid request path');
  // As undici writes it: asks an HTTP/1.0 upstream to keep the connection too.
  let head = `${method} ${path} HTTP/1.1\r\nconnection: keep-alive\r\n`;
  for (const name in headers) {
    const v = headers[name] as unknown;
    if (v === undefined) continue;
    const shape = nameShape(name);
    if (shape === BAD) throw new H1ArgumentError('invalid header key');
    if (OWN.has(shape === UPPER ? name.toLowerCase() : name)) continue;
    if (typeof v === 'string') {
      if (BAD_VALUE.test(v)) throw new H1ArgumentError(`invalid ${name} header`);
      head += `${name}: ${v}\r\n`;
    } else if (Array.isArray(v)) {
      for (const one of v as unknown[]) head += `${name}: ${headerValue(name, one)}\r\n`;
    } else head += `${name}: ${headerValue(name, v)}\r\n`;
  }
  return head;
}

function headerValue(name: string, v: unknown): string {
  if (v === null) return '';
  if (typeof v === 'object' || typeof v === 'function') throw new H1ArgumentError(`invalid ${name} header`);
  const s = `${v as string | number | boolean}`;
  if (BAD_VALUE.test(s)) throw new H1ArgumentError(`invalid ${name} header`);
  return s;
}

/** The framing header of a request without a body (`content-length: 0` where the method expects one). */
export function emptyBodyFraming(method: string): string {
  return EXPECTS_PAYLOAD.has(method) ? 'content-length: 0\r\n\r\n' : '\r\n';
}

/** The request's declared Content-Length (for a streamed body), or -1: then the body is sent chunked. */
export function declaredLength(headers: IncomingHttpHeaders): number {
  const v = headers['content-length'];
  if (typeof v !== 'string' || !/^\d{1,15}$/.test(v)) return -1;
  return Number(v);
}
