// The npm package as a user gets it: `npm pack` of this checkout (its prepack builds build/, docs/adr/0022, 0057),
// then `npm install` of the tarball into an empty app. Shared by test/install/package.test.ts and the peers bench
// (test/bench/peers.ts), which runs the installed command beside the clone's.
import { cpSync, existsSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { childEnv, runCommand } from './cli-process.ts';
import type { Run } from './cli-process.ts';

/** What a clone holds that the package build reads; tests, docs and the git metadata stay behind. */
const COPIED = ['package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.build.json', 'README.md', 'LICENSE', 'bin', 'kernel', 'plugins', 'schemas', 'examples', 'deploy', 'docs'];

/** `node` on PATH is the Node running this process (Node 24 from node_modules), for npm, npx and `#!/usr/bin/env node`. */
export const PACKAGE_ENV = childEnv({ PATH: `${dirname(process.execPath)}${delimiter}${process.env.PATH ?? ''}`, npm_config_update_notifier: 'false' });

export interface PackedInstall {
  /** The copy of the checkout that was packed. */
  readonly stage: string;
  readonly tarball: string;
  /** The tarball's files, as `npm pack --json` lists them. */
  readonly packedFiles: string[];
  /** The user's app folder: its node_modules holds the package and its dependencies. */
  readonly app: string;
  /** `<app>/node_modules/<name>`. */
  readonly installed: string;
}

const ok = (r: Run, what: string): Run => {
  if (r.code !== 0) throw new Error(`${what} failed (exit ${r.code}):\n${r.stdout}\n${r.stderr}`);
  return r;
};

/**
 * Pack `root` from a copy in `<tmp>/stage` (prepack points package.json at build/ until postpack, which must not
 * happen under other processes running from the checkout) and install the tarball into `<tmp>/app`. The npm cache
 * (filled by `npm ci` of the checkout) serves what it can: about a minute on a quiet machine.
 */
export async function packAndInstall(root: string, tmp: string, timeoutMs: number): Promise<PackedInstall> {
  const npm = (cwd: string, args: readonly string[]): Promise<Run> => runCommand('npm', args, { cwd, env: PACKAGE_ENV, timeout: timeoutMs });
  const stage = join(tmp, 'stage');
  mkdirSync(stage);
  for (const entry of COPIED) {
    if (!existsSync(join(root, entry))) continue;
    cpSync(join(root, entry), join(stage, entry), { recursive: true, filter: (f) => !f.includes(`${'/'}node_modules`) });
  }
  symlinkSync(join(root, 'node_modules'), join(stage, 'node_modules'), 'dir');
  const pack = ok(await npm(stage, ['pack', '--json', '--pack-destination', tmp]), 'npm pack');
  const [info] = JSON.parse(pack.stdout.slice(pack.stdout.indexOf('['))) as [{ name: string; filename: string; files: { path: string }[] }];

  const app = join(tmp, 'app');
  mkdirSync(app);
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'my-gateway', private: true, type: 'module' }));
  const tarball = join(tmp, info.filename);
  ok(await npm(app, ['install', '--prefer-offline', '--no-audit', '--no-fund', tarball]), 'npm install of the tarball');
  return { stage, tarball, packedFiles: info.files.map((f) => f.path), app, installed: join(app, 'node_modules', info.name) };
}
