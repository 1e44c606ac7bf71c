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

const KEEP_ALIVE_LINE = ' HTTP/1.1\r\nconnection: keep-alive\r\n';

/** Copy latin1 `s` (checked already) into `out` at `at`; returns where it ends. */
function put(out: Buffer, at: number, s: string): number {
  for (let i = 0; i < s.length; i++) out[at + i] = s.charCodeAt(i);
  return at + s.length;
}

/**
 * The request as `requestHead` writes it, then `framing` (the framing header and the blank line) and `body`, in one
 * Buffer, each header copied byte by byte as its value is checked: no string per header line and no concatenated
 * head to flatten, which were ~1 KiB of the plain route's ~13 KiB allocated per request (docs/perf.md "Plain route
 * CPU, session 9"). Headers that are not all plain strings (arrays, numbers) take `requestHead`.
 */
export function requestBytes(method: string, path: string, headers: IncomingHttpHeaders, framing: string, body: Buffer | null): Buffer {
  if (!TOKEN.test(method)) throw new H1ArgumentError('invalid request method');
  if (path.length === 0 || BAD_PATH.test(path)) throw new H1ArgumentError('invalid request path');
  const bodyLength = body === null ? 0 : body.length;
  let size = method.length + 1 + path.length + KEEP_ALIVE_LINE.length + framing.length + bodyLength;
  for (const name in headers) {
    const v = headers[name] as unknown;
    if (v === undefined) continue;
    if (typeof v !== 'string') return slowBytes(method, path, headers, framing, body);
    const shape = nameShape(name);
    if (shape === BAD) throw new H1ArgumentError('invalid header key');
    if (!OWN.has(shape === UPPER ? name.toLowerCase() : name)) size += name.length + v.length + 4;
  }
  const out = Buffer.allocUnsafe(size);
  let at = put(out, 0, method);
  out[at++] = 32;
  at = put(out, put(out, at, path), KEEP_ALIVE_LINE);
  for (const name in headers) {
    const v = headers[name] as string | undefined;
    if (v === undefined) continue;
    // The name is copied, then taken back if it is one of the client's own (the check of the first pass, again).
    const start = at;
    let upper = false;
    for (let i = 0; i < name.length; i++) {
      const c = name.charCodeAt(i);
      if (c >= 65 && c <= 90) upper = true;
      out[at++] = c;
    }
    if (OWN.has(upper ? name.toLowerCase() : name)) {
      at = start;
      continue;
    }
    out[at++] = 58; // ':'
    out[at++] = 32;
    for (let i = 0; i < v.length; i++) {
      const c = v.charCodeAt(i);
      // Field-value bytes only (as BAD_VALUE): HTAB, SP-~, obs-text.
      if (c > 255 || c === 127 || (c < 32 && c !== 9)) throw new H1ArgumentError(`invalid ${name} header`);
      out[at++] = c;
    }
    out[at++] = 13;
    out[at++] = 10;
  }
  at = put(out, at, framing);
  // Typed-array stores past the end are dropped silently: a miscounted size must fail loudly, never send a cut head.
  if (at + bodyLength !== size) throw new Error(`request head miscounted: ${at + bodyLength} of ${size} bytes`);
  if (body !== null) body.copy(out, at);
  return out;
}

function slowBytes(method: string, path: string, headers: IncomingHttpHeaders, framing: string, body: Buffer | null): Buffer {
  const head = requestHead(method, path, headers) + framing;
  const out = Buffer.allocUnsafe(head.length + (body === null ? 0 : body.length));
  out.write(head, 0, 'latin1');
  if (body !== null) body.copy(out, head.length);
  return out;
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
