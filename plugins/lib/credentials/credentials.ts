/**
 * Reading credentials from `Authorization` (BEHAVIOUR.md §5: the scheme compares case-insensitively). Shared by
 * jwtAuth, mcpAuthentication, apiKey and basicAuth; kept apart from the JWT library so that apiKey and basicAuth
 * do not pull jose into a trimmed distribution.
 */

import type { Exchange } from 'switchyard/sdk';
import { ORIGINAL_AUTHORIZATION } from '../backend-auth/contract.ts';

/**
 * Remove a credential header the gateway accepted (DECIDED 6: it never reaches the upstream). The original
 * `Authorization` value is kept as a request attribute so `backendAuth.passthrough` can send it on.
 */
export function stripAcceptedCredential(ex: Exchange, header: string): void {
  if (header === 'authorization') {
    const original = ex.headers.authorization;
    if (typeof original === 'string' && ex.get(ORIGINAL_AUTHORIZATION) === undefined) ex.set(ORIGINAL_AUTHORIZATION, original);
  }
  delete ex.headers[header];
}

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
