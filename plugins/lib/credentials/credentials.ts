/**
 * Reading credentials from `Authorization` (BEHAVIOUR.md §5: the scheme compares case-insensitively). Shared by
 * jwtAuth, mcpAuthentication, apiKey and basicAuth; kept apart from the JWT library so that apiKey and basicAuth
 * do not pull jose into a trimmed distribution.
 *
 * The policies do not remove what they read themselves: each declares its headers as `credentialHeaders` and the
 * kernel removes them after the last such policy of the route, accepted or not (DECIDED 6, ADR 0015).
 */

/** What an auth policy that reads only `Authorization` declares as its `credentialHeaders`. */
export const AUTHORIZATION_ONLY: readonly string[] = Object.freeze(['authorization']);

function afterScheme(header: string | string[] | undefined, scheme: string): string | undefined {
  if (typeof header !== 'string') return undefined;
  const n = scheme.length;
  if (header.length <= n + 1) return undefined;
  const sep = header.charCodeAt(n);
  if (sep !== 32 && sep !== 9) return undefined;
  if (header.slice(0, n).toLowerCase() !== scheme) return undefined;
  const value = header.slice(n + 1).trim();
  return value.length > 0 ? value : undefined;
}

/**
 * The token of an `Authorization: Bearer <token>` header (scheme case-insensitive, surrounding blanks ignored),
 * or undefined when the header is absent, uses another scheme, or carries an empty token.
 */
export function bearerToken(header: string | string[] | undefined): string | undefined {
  return afterScheme(header, 'bearer');
}

/** The base64 part of `Authorization: Basic <b64>`, or undefined (same rules as `bearerToken`). */
export function basicCredential(header: string | string[] | undefined): string | undefined {
  return afterScheme(header, 'basic');
}

/**
 * Where `apiKey` and `virtualKeys` read a key, in preference order (DECIDED 7): `x-api-key`, `x-goog-api-key` (Gemini
 * SDK clients), the bearer token; removed before any upstream (ADR 0015).
 */
export const KEY_HEADERS: readonly string[] = Object.freeze(['x-api-key', 'x-goog-api-key', 'authorization']);

/** The first non-empty one of the key headers, in preference order; else the bearer token. */
export function presentedKey(headers: Readonly<Record<string, string | string[] | undefined>>): string | undefined {
  for (const name of ['x-api-key', 'x-goog-api-key']) {
    const value = headers[name];
    if (typeof value === 'string' && value.length > 0) return value.trim();
  }
  return bearerToken(headers.authorization as string | undefined);
}

/** Printable ASCII, blanks allowed inside only. */
const PRESENTABLE_KEY = /^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$/;

/**
 * Why a configured key (`apiKey`, declared `virtualKeys`) could never be presented, or undefined when it can. Header
 * values reach the gateway one byte per character and are trimmed, so a key with characters past ASCII, a control
 * character or blanks at either end never matched: a config error, not a key that silently fails. Names no key.
 */
export function unpresentableKey(key: string): string | undefined {
  return PRESENTABLE_KEY.test(key) ? undefined : 'a key must be printable ASCII without blanks at either end (clients send it in an HTTP header)';
}

/** The WebSocket subprotocol a browser's OpenAI Realtime client carries its key in (a browser cannot set headers). */
const SUBPROTOCOL_KEY = 'openai-insecure-api-key.';

/**
 * A key sent as the subprotocol `openai-insecure-api-key.<key>`, taken out of `Sec-WebSocket-Protocol` (the other
 * subprotocols kept in order, the header blanked when none is left), or undefined. Taken whatever becomes of it: it is
 * a credential, and the header cannot be withheld whole as the key headers are (ADR 0195).
 */
export function takeSubprotocolKey(headers: Record<string, string | string[] | undefined>): string | undefined {
  const value = headers['sec-websocket-protocol'];
  if (typeof value !== 'string' || !value.includes(SUBPROTOCOL_KEY)) return undefined;
  let key: string | undefined;
  const kept: string[] = [];
  for (const part of value.split(',')) {
    const name = part.trim();
    if (!name.startsWith(SUBPROTOCOL_KEY)) {
      if (name.length > 0) kept.push(name);
    } else if (key === undefined && name.length > SUBPROTOCOL_KEY.length) key = name.slice(SUBPROTOCOL_KEY.length);
  }
  headers['sec-websocket-protocol'] = kept.length > 0 ? kept.join(', ') : undefined;
  return key;
}
