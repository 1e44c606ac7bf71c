import type { IncomingHttpHeaders } from 'node:http';
import type { AdminUiConfig } from '../compile/snapshot.ts';

/** Why a request to the admin address is not served: its status, a message and headers to add. */
export interface Refusal {
  status: number;
  message: string;
  headers?: Record<string, string>;
}

/**
 * Whether a server bound to `address` (as `server.address()` gives it) is reachable from this machine only: `::1` and
 * all of 127.0.0.0/8 (`127.0.0.2` too). Without credentials, `/ui` is served only there.
 */
export function isLoopbackAddress(address: string): boolean {
  return address === '::1' || /^(?:::ffff:)?127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/i.test(address);
}

/** Equal strings, compared in constant time (digests, so lengths do not show). */
function same(a: string, b: string): boolean {
  // Not an ES import of node:crypto: its namespace loads WebCrypto for every gateway (docs/perf.md "Memory, session
  // 10b"); the admin address is asked for credentials rarely.
  const { createHash, timingSafeEqual } = process.getBuiltinModule('node:crypto');
  return timingSafeEqual(createHash('sha256').update(a).digest(), createHash('sha256').update(b).digest());
}

/** Whether `config.adminUi` sets credentials, which then guard every admin endpoint on any address (ADR 0136). */
export function hasAdminCredentials(config: AdminUiConfig | undefined): boolean {
  return config?.basicAuth !== undefined || config?.apiKey !== undefined;
}

/**
 * The credentials check of the admin address (ADR 0136): with `config.adminUi.basicAuth` or `apiKey` set, a request
 * must present one of them (`Authorization: Basic`, `Authorization: Bearer <key>` or `x-api-key: <key>`), else 401
 * with a challenge. Undefined to serve it, and always when no credentials are configured.
 */
export function adminCredentials(config: AdminUiConfig | undefined, headers: IncomingHttpHeaders): Refusal | undefined {
  const basic = config?.basicAuth;
  const key = config?.apiKey;
  if (!basic && !key) return undefined;
  const auth = headers.authorization ?? '';
  const space = auth.indexOf(' ');
  const scheme = space > 0 ? auth.slice(0, space).toLowerCase() : '';
  const value = space > 0 ? auth.slice(space + 1).trim() : '';
  if (key) {
    const given = scheme === 'bearer' ? value : typeof headers['x-api-key'] === 'string' ? headers['x-api-key'] : undefined;
    if (given !== undefined && same(given, key)) return undefined;
  }
  if (basic && scheme === 'basic') {
    const decoded = Buffer.from(value, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    // Both compared, whatever the first says, so timing does not tell a right user name.
    const userOk = colon > 0 && same(decoded.slice(0, colon), basic.username);
    const passOk = colon > 0 && same(decoded.slice(colon + 1), basic.password);
    if (userOk && passOk) return undefined;
  }
  // A browser prompts for basic credentials; a key-only config asks scripts for a bearer token (RFC 7235: a 401 names one).
  const challenge = basic ? 'Basic realm="switchyard admin", charset="UTF-8"' : 'Bearer realm="switchyard admin"';
  return { status: 401, message: 'unauthorized: the admin address needs credentials (config.adminUi basicAuth or apiKey)', headers: { 'www-authenticate': challenge } };
}
