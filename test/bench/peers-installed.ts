// The peers bench's `switchyard installed package` row (issue 15, ADR 0098): what users run is not the clone's
// TypeScript but the npm package (or the Docker image, which installs the same tarball): bin/switchyard.js loading
// the esbuild bundle of build/bundle/ (ADR 0057). This packs the checkout once per run, as `npm pack` does, and
// installs the tarball into an empty app with test/install's plumbing (test/helpers/packed-install.ts).
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { packAndInstall } from '../helpers/packed-install.ts';

/** npm pack (tsc and esbuild in prepack) and an install from the npm cache: about a minute quiet, more when busy. */
const PACK_TIMEOUT_MS = 600_000;

/**
 * The installed package's `bin/switchyard.js`, or undefined (with a note) when BENCH_PEERS_INSTALLED=0 skips the
 * row or the pack or install fails (no npm cache, say): the clone's row is measured either way.
 */
export async function installedCli(root: string, work: string, notes: string[], log: (line: string) => void): Promise<string | undefined> {
  if (process.env.BENCH_PEERS_INSTALLED === '0') {
    notes.push('BENCH_PEERS_INSTALLED=0: the installed package row is skipped; the headline is the clone row');
    return undefined;
  }
  const dir = join(work, 'package');
  mkdirSync(dir, { recursive: true });
  const t0 = performance.now();
  try {
    const { installed } = await packAndInstall(root, dir, PACK_TIMEOUT_MS);
    log(`packed and installed the checkout in ${((performance.now() - t0) / 1000).toFixed(0)} s: ${installed}`);
    return join(installed, 'bin/switchyard.js');
  } catch (err) {
    notes.push(`the installed package row is skipped, npm pack or install failed: ${(err as Error).message.slice(0, 500)}`);
    return undefined;
  }
}
