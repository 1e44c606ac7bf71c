// Build a trimmed distribution: the CLI with one preset, bundled into plain JavaScript (ARCHITECTURE.md §9,
// docs/adr/0012). Run with `npm run build:dist -- --preset NAME [--out DIR] [--minify]`. The work is in
// build-dist-presets.ts (the preset), build-dist-esbuild.ts (the bundle) and build-dist-output.ts (the files beside it).
import { join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type * as esbuild from 'esbuild';
import { bundle } from './build-dist-esbuild.ts';
import { outputSizes, packagesOf, prepareOut, writePackageFiles } from './build-dist-output.ts';
import { listPresets, readPreset, ROOT, slotModulesOf } from './build-dist-presets.ts';
import type { PluginSummary } from './build-dist-presets.ts';

export type { PluginSummary };
export { listPresets };

/**
 * npm packages left out of the bundle and installed beside it instead (the generated package.json lists those
 * the preset reaches). Empty: every dependency today is plain JavaScript that bundles (docs/adr/0012). A
 * package with a native addon, or one that reads its own files at run time, goes here.
 */
export const EXTERNAL_PACKAGES: readonly string[] = [];

export interface BuildOptions {
  /** A file name in plugins/presets/ without `.ts` (`full`, `minimal`), or the path of a preset module. */
  readonly preset: string;
  /** Output folder; default dist/<preset>. */
  readonly out?: string;
  readonly minify?: boolean;
  /** Progress lines; default none. */
  readonly log?: (line: string) => void;
}

export interface BuildResult {
  readonly name: string;
  readonly out: string;
  readonly plugins: readonly PluginSummary[];
  /** npm packages bundled (name → version). */
  readonly bundled: Readonly<Record<string, string>>;
  /** npm packages left external, listed as dependencies in the generated package.json (name → range). */
  readonly dependencies: Readonly<Record<string, string>>;
  /** Output JavaScript files (relative to `out`) with their sizes in bytes. */
  readonly files: Readonly<Record<string, number>>;
  readonly totalBytes: number;
  readonly millis: number;
}

/** Bundle the CLI with one preset into `out`: switchyard.mjs, chunks/, switchyard.schema.json, package.json. */
export async function buildDist(options: BuildOptions): Promise<BuildResult> {
  const started = performance.now();
  const log = options.log ?? ((): void => {});
  const preset = await readPreset(options.preset);
  const out = resolve(options.out ?? join(ROOT, 'dist', preset.name));
  prepareOut(out);
  const slotModules = await slotModulesOf(preset.plugins);
  const metafile = await bundle({ out, presetFile: preset.file, exportName: preset.exportName, slotModules, external: EXTERNAL_PACKAGES, minify: options.minify === true, log });
  const packages = packagesOf(metafile, EXTERNAL_PACKAGES);
  writePackageFiles({ out, name: preset.name, plugins: preset.summaries, slotModules, packages, metafile, log });
  const { files, totalBytes } = outputSizes(metafile, out);
  const { bundled, dependencies } = packages;
  return { name: preset.name, out, plugins: preset.summaries, bundled, dependencies, files, totalBytes, millis: Math.round(performance.now() - started) };
}

const USAGE = `Usage: node bin/build-dist.ts --preset NAME [--out DIR] [--minify]
  --preset NAME   a preset in plugins/presets/ (full, minimal, ...) or the path of a preset module
  --out DIR       output folder (default dist/NAME)
  --minify        minify the bundle (names kept)
`;

function parseArgs(argv: readonly string[]): { preset?: string; out?: string; minify: boolean; help: boolean } | string {
  const args: { preset?: string; out?: string; minify: boolean; help: boolean } = { minify: false, help: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--preset' || a === '--out') {
      const v = argv[++i];
      if (v === undefined) return `${a} needs a value`;
      if (a === '--preset') args.preset = v;
      else args.out = v;
    } else if (a.startsWith('--preset=')) args.preset = a.slice(9);
    else if (a.startsWith('--out=')) args.out = a.slice(6);
    else if (a === '--minify') args.minify = true;
    else if (a === '-h' || a === '--help') args.help = true;
    else return `unknown argument \`${a}\``;
  }
  return args;
}

async function cli(argv: readonly string[]): Promise<number> {
  const args = parseArgs(argv);
  if (typeof args === 'string' || (!args.help && !args.preset)) {
    process.stderr.write(`build-dist: ${typeof args === 'string' ? args : '--preset is required'}\n\n${USAGE}presets: ${(await listPresets()).join(', ')}\n`);
    return 2;
  }
  if (args.help) {
    process.stdout.write(`${USAGE}presets: ${(await listPresets()).join(', ')}\n`);
    return 0;
  }
  try {
    const log = (line: string): void => void process.stderr.write(`${line}\n`);
    const r = await buildDist({ preset: args.preset!, out: args.out, minify: args.minify, log });
    const kib = (n: number): string => `${(n / 1024).toFixed(0)} KiB`;
    const entry = r.files['switchyard.mjs'] ?? 0;
    process.stdout.write(
      `built ${relative(process.cwd(), r.out) || '.'} (preset ${r.name}, ${r.plugins.length} plugins) in ${r.millis} ms\n` +
        `  ${kib(r.totalBytes)} of JavaScript in ${Object.keys(r.files).length} files (entry ${kib(entry)})\n` +
        `  bundled packages: ${Object.keys(r.bundled).join(', ') || 'none'}\n` +
        `  external dependencies: ${Object.keys(r.dependencies).join(', ') || 'none'}\n`,
    );
    return 0;
  } catch (err) {
    const e = err as { errors?: esbuild.Message[]; message?: string };
    process.stderr.write(`build-dist: ${e.message ?? String(err)}\n`);
    return 1;
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  process.exitCode = await cli(process.argv.slice(2));
}
