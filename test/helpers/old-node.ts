import { execFileSync } from 'node:child_process';
import { accessSync, constants, realpathSync } from 'node:fs';
import { delimiter, join } from 'node:path';

/** `process.versions.node`-style `major.minor.patch` compared with `>=` of `engines`. */
function older(version: string, floor: readonly [number, number]): boolean {
  const [major, minor] = version.replace(/^v/, '').split('.').map(Number) as [number, number];
  return major < floor[0] || (major === floor[0] && minor < floor[1]);
}

/**
 * A real Node executable older than `floor` on this machine (the system one here is v20), searched on PATH and
 * in the usual places like `which -a node`; undefined when there is none.
 */
export function findOldNode(floor: readonly [number, number] = [22, 12]): { path: string; version: string } | undefined {
  const dirs = [...(process.env.PATH ?? '').split(delimiter), '/usr/bin', '/bin', '/usr/local/bin'];
  const seen = new Set<string>();
  for (const dir of dirs) {
    if (!dir) continue;
    const candidate = join(dir, 'node');
    let real: string;
    try {
      accessSync(candidate, constants.X_OK);
      real = realpathSync(candidate);
    } catch {
      continue;
    }
    if (seen.has(real)) continue;
    seen.add(real);
    try {
      const version = execFileSync(candidate, ['--version'], { encoding: 'utf8', timeout: 10_000 }).trim();
      if (/^v\d+\.\d+\.\d+/.test(version) && older(version, floor)) return { path: candidate, version };
    } catch {
      // Not a runnable Node (a wrapper script of a package manager, say).
    }
  }
  return undefined;
}
