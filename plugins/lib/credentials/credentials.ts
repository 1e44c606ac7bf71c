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
