// The npm package build (docs/adr/0022), run by `npm pack` and `npm publish`:
//   prepack:  node bin/build-package.ts          emit build/ (JavaScript + .d.ts) and point package.json at it
//   postpack: node bin/build-package.ts --restore put the clone's package.json back
// A clone keeps running the TypeScript sources (docs/adr/0001); only the packed tarball carries build/.
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const BUILD = join(ROOT, 'build');
const PKG_FILE = join(ROOT, 'package.json');
/** The clone's package.json while the packed one is on disk; kept outside build/ so a rebuild cannot lose it. */
const SAVED = join(ROOT, '.package.json.prepack');

type Exports = Record<string, string | Record<string, string>>;
interface PackageJson {
  exports: Exports;
  scripts?: Record<string, string>;
  devDependencies?: Record<string, string>;
  allowScripts?: unknown;
  [key: string]: unknown;
}

/** `./kernel/sdk/index.ts` → types and code in build/; other targets (package.json) unchanged. */
export function packedExports(exports: Exports): Exports {
  const out: Exports = {};
  for (const [key, target] of Object.entries(exports)) {
    if (typeof target !== 'string' || !/^\.\/(kernel|plugins)\/.*\.ts$/.test(target)) {
      out[key] = target;
      continue;
    }
    const base = `./build/${target.slice(2, -3)}`;
    out[key] = { types: `${base}.d.ts`, default: `${base}.js` };
  }
  return out;
}

/** The package.json that goes into the tarball: exports at build/, nothing only a clone uses. */
export function packedPackageJson(source: PackageJson): PackageJson {
  const { scripts, devDependencies: _dev, allowScripts: _allow, ...rest } = source;
  // postpack stays: npm runs the scripts of the manifest it read before prepack, but say it on disk too.
  return { ...rest, exports: packedExports(source.exports), scripts: scripts?.postpack ? { postpack: scripts.postpack } : {} };
}

function restore(): boolean {
  if (!existsSync(SAVED)) return false;
  renameSync(SAVED, PKG_FILE);
  return true;
}

/** Every `new URL('./rel', import.meta.url)` of the sources names a file read beside the module: copy it along. */
function copyRuntimeAssets(): string[] {
  const copied: string[] = [];
  const pattern = /new URL\(\s*(['"])(\.{1,2}\/[^'"]*)\1\s*,\s*import\.meta\.url\s*\)/g;
  const walk = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(join(dir, e.name)) : [join(dir, e.name)]));
  for (const file of [...walk(join(ROOT, 'kernel')), ...walk(join(ROOT, 'plugins'))]) {
    if (!file.endsWith('.ts') || file.endsWith('.test.ts')) continue;
    for (const match of readFileSync(file, 'utf8').matchAll(pattern)) {
      const from = resolve(dirname(file), match[2]!);
      const to = join(BUILD, relative(ROOT, from));
      if (!existsSync(from) || existsSync(to)) continue;
      cpSync(from, to, { recursive: true });
      copied.push(relative(ROOT, from));
    }
  }
  return copied;
}

/** tsc keeps `./x.ts` in declaration files; `.js` is what a consumer's resolution of the package expects. */
function rewriteDeclarations(dir: string): void {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const full = join(dir, e.name);
    if (e.isDirectory()) rewriteDeclarations(full);
    else if (e.name.endsWith('.d.ts')) {
      const text = readFileSync(full, 'utf8');
      const next = text.replace(/(\bfrom\s+|\bimport\s*\(\s*|\bimport\s+)(['"])(\.{1,2}\/[^'"]+)\.ts\2/g, '$1$2$3.js$2');
      if (next !== text) writeFileSync(full, next);
    }
  }
}

export function build(log: (line: string) => void = () => {}): void {
  if (restore()) log('restored package.json left by an interrupted pack');
  rmSync(BUILD, { recursive: true, force: true });
  const tsc = join(dirname(createRequire(import.meta.url).resolve('typescript/package.json')), 'bin/tsc');
  const run = spawnSync(process.execPath, [tsc, '-p', join(ROOT, 'tsconfig.build.json')], { cwd: ROOT, encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`tsc -p tsconfig.build.json failed (exit ${run.status}):\n${run.stdout}${run.stderr}`);
  for (const asset of copyRuntimeAssets()) log(`  asset ${asset}`);
  rewriteDeclarations(BUILD);
  if (!existsSync(join(BUILD, 'kernel/boot/dist-entry.js'))) throw new Error('build/ holds no kernel/boot/dist-entry.js');

  const text = readFileSync(PKG_FILE, 'utf8');
  const packed = packedPackageJson(JSON.parse(text) as PackageJson);
  mkdirSync(dirname(SAVED), { recursive: true });
  writeFileSync(SAVED, text);
  writeFileSync(PKG_FILE, `${JSON.stringify(packed, null, 2)}\n`);
  log('package.json points at build/ until postpack');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  try {
    if (process.argv.includes('--restore')) restore();
    else build((line) => process.stderr.write(`${line}\n`));
  } catch (err) {
    restore();
    process.stderr.write(`build-package: ${(err as Error).message}\n`);
    process.exitCode = 1;
  }
}
