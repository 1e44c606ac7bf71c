import type { IncomingHttpHeaders } from 'node:http';

/**
 * The `Authorization` value for a configured key (BEHAVIOUR.md DECIDED 8): a value containing a space already
 * names its scheme (`Bearer abc`, `Basic ...`) and is sent verbatim; a bare token gets `Bearer `.
 * Returns an error message (never containing the key) when the value cannot be a header value.
 */
export function authorizationValue(raw: string): string | { error: string } {
  const value = headerValue(raw);
  if (typeof value !== 'string') return value;
  return value.includes(' ') ? value : `Bearer ${value}`;
}

/** The trimmed key as a header value, or an error message that never contains it. */
function headerValue(raw: string): string | { error: string } {
  const value = raw.trim();
  if (value.length === 0) return { error: 'is empty' };
  // Header values may not hold control characters; a stray CR/LF would also split the request.
  if (/[\u0000-\u0008\u000a-\u001f\u007f]/.test(value)) return { error: 'contains a line break or another control character' };
  if (/[^\u0000-\u00ff]/.test(value)) return { error: 'contains characters that cannot be sent in an HTTP header' };
  return value;
}

/** Where the key goes (the reference's `key.location`): exactly one of these. */
export interface KeyLocation {
  header?: { name: string; prefix?: string };
  queryParameter?: { name: string };
  cookie?: { name: string };
}

/** Puts the key on one upstream attempt: its headers, and its path for a query parameter. */
export type Placement = (attempt: { headers: IncomingHttpHeaders; path: string }) => void;

/** An HTTP field name (RFC 9110 token). */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** Headers the gateway frames and routes by: a key there would break the request, not authenticate it. */
const OWNED = new Set(['host', 'content-length', 'transfer-encoding', 'connection', 'keep-alive', 'te', 'trailer', 'upgrade', 'proxy-connection', 'cookie']);
/** A cookie value (RFC 6265 cookie-octet): no space, quote, comma, semicolon or backslash. */
const COOKIE_VALUE = /^[\x21\x23-\x2b\x2d-\x3a\x3c-\x5b\x5d-\x7e]+$/;

/**
 * How to place `raw` at `location` (undefined: `Authorization` by DECIDED 8), or an error message naming the field
 * (`path`, relative to `location`) and never the key.
 */
export function keyPlacement(raw: string, location: KeyLocation | undefined): Placement | { error: string; path: string[] } {
  const kinds = location === undefined ? [] : Object.keys(location);
  if (location !== undefined && kinds.length !== 1) return { error: 'needs exactly one of `header`, `queryParameter`, `cookie`', path: [] };
  if (location?.header !== undefined) {
    const name = location.header.name.toLowerCase();
    if (!TOKEN.test(name)) return { error: `header name \`${location.header.name}\` is not a valid HTTP header name`, path: ['header', 'name'] };
    if (OWNED.has(name)) return { error: `cannot be the \`${name}\` header, which the gateway sets itself${name === 'cookie' ? ' (use `location.cookie`)' : ''}`, path: ['header', 'name'] };
    const prefix = location.header.prefix;
    // Without a prefix `Authorization` keeps DECIDED 8; another header gets the value as written.
    const value = prefix === undefined && name === 'authorization' ? authorizationValue(raw) : headerValue(raw);
    if (typeof value !== 'string') return { error: `the key ${value.error}`, path: [] };
    // An `authorization` value that names its scheme (a space: `Basic abc`) is sent as written, as DECIDED 8 has it.
    const sent = prefix === undefined || (name === 'authorization' && value.includes(' ')) ? value : `${prefix}${value}`;
    if (typeof headerValue(`x${sent}x`) !== 'string') return { error: 'the header prefix cannot be sent in an HTTP header', path: ['header', 'prefix'] };
    return ({ headers }) => {
      headers[name] = sent;
    };
  }
  if (location?.queryParameter !== undefined) {
    const name = location.queryParameter.name;
    const value = headerValue(raw);
    if (typeof value !== 'string') return { error: `the key ${value.error}`, path: [] };
    const pair = `${encodeURIComponent(name)}=${encodeURIComponent(value)}`;
    return (attempt) => {
      attempt.path = withQueryParameter(attempt.path, name, pair);
    };
  }
  if (location?.cookie !== undefined) {
    const name = location.cookie.name;
    if (!TOKEN.test(name)) return { error: `cookie name \`${name}\` is not a valid cookie name`, path: ['cookie', 'name'] };
    const value = raw.trim();
    if (value.length === 0) return { error: 'the key is empty', path: [] };
    if (!COOKIE_VALUE.test(value)) return { error: 'the key cannot be a cookie value (spaces, quotes, commas, semicolons, backslashes and control characters cannot be sent)', path: [] };
    return ({ headers }) => {
      headers.cookie = withCookie(headers.cookie, name, `${name}=${value}`);
    };
  }
  const value = authorizationValue(raw);
  if (typeof value !== 'string') return { error: `the key ${value.error}`, path: [] };
  return ({ headers }) => {
    headers.authorization = value;
  };
}

/** `path` with every parameter called `name` removed (a client's own must not reach the API beside the key) and `pair` added. */
export function withQueryParameter(path: string, name: string, pair: string): string {
  const q = path.indexOf('?');
  if (q < 0) return `${path}?${pair}`;
  const kept = path
    .slice(q + 1)
    .split('&')
    .filter((p) => p !== '' && decodeName(p.split('=', 1)[0]!) !== name);
  kept.push(pair);
  return `${path.slice(0, q)}?${kept.join('&')}`;
}

/** A query parameter name as the API reads it (`+` is a space in a form-encoded query). */
function decodeName(raw: string): string {
  try {
    return decodeURIComponent(raw.replace(/\+/g, ' '));
  } catch {
    return raw;
  }
}

/** The `Cookie` header with the client's cookies of `name` removed and `pair` last. */
function withCookie(current: string | string[] | undefined, name: string, pair: string): string {
  const all = current === undefined ? [] : (Array.isArray(current) ? current : [current]).flatMap((c) => c.split(';'));
  const kept = all.map((c) => c.trim()).filter((c) => c !== '' && c.split('=', 1)[0]!.trim() !== name);
  kept.push(pair);
  return kept.join('; ');
}
