import type { IncomingHttpHeaders } from 'node:http';

// The lean server side's request-head parser (ADR 0088). It accepts only the common, well-formed HTTP/1.1 request and
// answers null for everything else, including what is merely unusual: the connection then goes to node:http (llhttp),
// which refuses, waits or serves exactly as it does today. So this parser never refuses anything itself, and a wrong
// "null" costs only speed. docs/security.md "Lean HTTP/1.1 server side" lists what it accepts.

/** A request head the lean path serves: HTTP/1.1, a known method, origin form, no body framing but Content-Length. */
export interface RequestHead {
  readonly method: string;
  readonly url: string;
  /** node:http's `rawHeaders`: names as sent, values without surrounding whitespace. */
  readonly rawHeaders: string[];
  /** node:http's `headers`: names lower-cased (no name appears twice, so nothing is joined). */
  readonly headers: IncomingHttpHeaders;
  /** Content-Length, 0 without one. */
  readonly bodyLength: number;
  /** The client sent `Connection: close`. */
  readonly close: boolean;
  /** Offset just past the blank line ending the head. */
  readonly end: number;
}

/** Heads longer than this go to node:http (its limit, 16 KiB, answers 431 past it). */
export const MAX_HEAD_BYTES = 8 * 1024;
/** More header lines than this go to node:http. */
const MAX_HEADERS = 100;
/** Methods node:http's llhttp accepts, of those the lean path serves (CONNECT, and the WebDAV ones, are node's). */
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'OPTIONS', 'PATCH']);

/** RFC 9110 tchar. */
const TOKEN = new Uint8Array(128);
for (const c of "!#$%&'*+-.^_`|~") TOKEN[c.charCodeAt(0)] = 1;
for (let c = 48; c <= 57; c++) TOKEN[c] = 1;
for (let c = 65; c <= 90; c++) TOKEN[c] = 1;
for (let c = 97; c <= 122; c++) TOKEN[c] = 1;

/** Origin-form target characters: unreserved, sub-delims, `:@/?%` (RFC 3986); no fragment, no space, nothing else. */
const TARGET = new Uint8Array(128);
for (const c of "-._~!$&'()*+,;=:@/?%") TARGET[c.charCodeAt(0)] = 1;
for (let c = 48; c <= 57; c++) TARGET[c] = 1;
for (let c = 65; c <= 90; c++) TARGET[c] = 1;
for (let c = 97; c <= 122; c++) TARGET[c] = 1;

/** Headers whose presence hands the request to node:http: other body framing, 100-continue, protocol switches. */
const HANDED_OFF = new Set(['transfer-encoding', 'expect', 'upgrade', 'http2-settings', '__proto__']);

/** `Buffer#latin1Slice`: `toString('latin1', a, b)` without its argument checks (the bounds are this parser's). */
type Latin1 = Buffer & { latin1Slice(start: number, end: number): string };
const latin1 = (buf: Buffer, start: number, end: number): string => (buf as Latin1).latin1Slice(start, end);

const SP = 32;
const HTAB = 9;
const CR = 13;
const LF = 10;
const COLON = 58;

/**
 * Parse one request head at `buf[start..limit)`. Null when the head is incomplete or anything about it is outside the
 * lean path's grammar (see the file comment): the caller hands the connection to node:http, these bytes included.
 */
export function parseRequestHead(buf: Buffer, start: number, limit: number): RequestHead | null {
  if (limit - start > MAX_HEAD_BYTES) limit = start + MAX_HEAD_BYTES;
  let i = start;
  // Method: a token up to one SP.
  while (i < limit && TOKEN[buf[i]!] === 1) i++;
  if (i === start || i >= limit || buf[i] !== SP) return null;
  const method = latin1(buf, start, i);
  if (!METHODS.has(method)) return null;
  const targetStart = ++i;
  if (i >= limit || buf[i] !== 47 /* '/' */) return null;
  while (i < limit && buf[i]! < 128 && TARGET[buf[i]!] === 1) i++;
  if (i >= limit || buf[i] !== SP) return null;
  const url = latin1(buf, targetStart, i);
  i++;
  // `HTTP/1.1` CRLF, exactly.
  if (
    i + 10 > limit ||
    buf[i] !== 72 || buf[i + 1] !== 84 || buf[i + 2] !== 84 || buf[i + 3] !== 80 || buf[i + 4] !== 47 ||
    buf[i + 5] !== 49 || buf[i + 6] !== 46 || buf[i + 7] !== 49 || buf[i + 8] !== CR || buf[i + 9] !== LF
  ) {
    return null;
  }
  i += 10;
  const rawHeaders: string[] = [];
  const headers: IncomingHttpHeaders = {};
  let bodyLength = 0;
  let close = false;
  let host = false;
  for (;;) {
    if (i >= limit) return null;
    if (buf[i] === CR) {
      if (i + 1 >= limit || buf[i + 1] !== LF) return null;
      i += 2;
      break;
    }
    if (rawHeaders.length >= MAX_HEADERS * 2) return null;
    const nameStart = i;
    while (i < limit && buf[i]! < 128 && TOKEN[buf[i]!] === 1) i++;
    if (i === nameStart || i >= limit || buf[i] !== COLON) return null;
    const rawName = latin1(buf, nameStart, i);
    i++;
    while (i < limit && (buf[i] === SP || buf[i] === HTAB)) i++;
    const valueStart = i;
    let valueEnd = i;
    // Field characters: visible ASCII, SP, HTAB. No CTL, no NUL, no obs-text; a CR must start the CRLF.
    for (; i < limit; i++) {
      const c = buf[i]!;
      if (c === CR) break;
      if (c > 126 || (c < SP && c !== HTAB)) return null;
      if (c !== SP && c !== HTAB) valueEnd = i + 1;
    }
    if (i + 1 >= limit || buf[i + 1] !== LF) return null;
    i += 2;
    // obs-fold (a line starting with whitespace) is llhttp's to refuse.
    if (i < limit && (buf[i] === SP || buf[i] === HTAB)) return null;
    const name = rawName.toLowerCase();
    // A name twice: node:http joins, drops or lists duplicates by name; that, and smuggling through them, is its job.
    if (Object.hasOwn(headers, name) || HANDED_OFF.has(name)) return null;
    const value = latin1(buf, valueStart, valueEnd);
    if (name === 'content-length') {
      if (value.length === 0 || value.length > 15) return null;
      for (let k = 0; k < value.length; k++) {
        const d = value.charCodeAt(k);
        if (d < 48 || d > 57) return null;
      }
      bodyLength = +value;
    } else if (name === 'connection') {
      const v = value.toLowerCase();
      if (v === 'close') close = true;
      else if (v !== 'keep-alive') return null;
    } else if (name === 'host') host = true;
    headers[name] = value;
    rawHeaders.push(rawName, value);
  }
  // node:http answers an HTTP/1.1 request without Host with 400.
  if (!host) return null;
  return { method, url, rawHeaders, headers, bodyLength, close, end: i };
}
