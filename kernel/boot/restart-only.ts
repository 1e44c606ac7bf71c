// Which settings of the static `config:` block a reload cannot apply: shared by a gateway, its workers and their
// supervisor (a small module, so the supervisor does not load the gateway's).
import type { StaticConfig } from '../compile/snapshot.ts';

/**
 * The static settings a reload does not apply, as one string to compare: logging, default timeouts (compiled into
 * each snapshot's plans), path normalisation, trustedProxies, upgradeProtocols, adminUi and drainTimeout (the stop
 * reads the live config's) apply on reload; the rest needs a restart.
 */
export function restartOnlyKey(c: StaticConfig): string {
  return JSON.stringify({ ...c, logging: 0, defaultTimeouts: 0, paths: 0, trustedProxies: 0, upgradeProtocols: 0, adminUi: 0, drainTimeoutMs: 0 });
}

export const RESTART_ONLY_CHANGED =
  'changes to the static `config:` block (addresses, plugins, headerTimeout, maxConnectionsPerBind) take effect after a restart';
