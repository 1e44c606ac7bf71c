import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { AdminUiConfig } from '../../compile/snapshot.ts';

export interface Refusal {
  status: number;
  message: string;
  headers?: Record<string, string>;
}

/** Equal strings, compared in constant time (digests, so lengths do not show). */
function same(a: string, b: string): boolean {
  return timingSafeEqual(createHash('sha256').update(a).digest(), createHash('sha256').update(b).digest());
}

/**
 * Who may use `/ui` (docs/security.md "Admin UI"): nobody when `adminUi.enabled` is false; with `basicAuth` or
 * `apiKey` configured, whoever presents them (on any address); without, only a loopback admin address serves it.
 * Undefined to serve the request.
 */
export function uiAccess(config: AdminUiConfig | undefined, loopback: boolean, headers: IncomingHttpHeaders): Refusal | undefined {
  if (config && !config.enabled) return { status: 404, message: 'not found: the admin UI is disabled (config.adminUi.enabled)' };
  const basic = config?.basicAuth;
  const key = config?.apiKey;
  if (!basic && !key) {
    return loopback ? undefined : { status: 403, message: 'forbidden: on a non-loopback adminAddr the admin UI needs config.adminUi.basicAuth or apiKey (docs/admin-ui.md)' };
  }
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
  return { status: 401, message: 'unauthorized: the admin UI needs credentials (config.adminUi)', headers: basic ? { 'www-authenticate': 'Basic realm="switchyard admin", charset="UTF-8"' } : {} };
}
