import type { AdminUiConfig } from '../../compile/snapshot.ts';
import { hasAdminCredentials } from '../admin-access.ts';
import type { Refusal } from '../admin-access.ts';

/**
 * Who may use `/ui` (docs/security.md "Admin UI"), once the admin server checked the credentials of every admin
 * endpoint (`adminCredentials`, ADR 0136): nobody when `adminUi.enabled` is false; with `basicAuth` or `apiKey`
 * configured, whoever passed that check (on any address); without, only a loopback admin address serves it.
 * Undefined to serve the request.
 */
export function uiAccess(config: AdminUiConfig | undefined, loopback: boolean): Refusal | undefined {
  if (config && !config.enabled) return { status: 404, message: 'not found: the admin UI is disabled (config.adminUi.enabled)' };
  if (hasAdminCredentials(config) || loopback) return undefined;
  return { status: 403, message: 'forbidden: on a non-loopback adminAddr the admin UI needs config.adminUi.basicAuth or apiKey (docs/admin-ui.md)' };
}
