// The npm package build (docs/adr/0022), run by `npm pack` and `npm publish`:
//   prepack:  node bin/build-package.ts          emit build/ (JavaScript + .d.ts) and point package.json at it
//   postpack: node bin/build-package.ts --restore put the clone's package.json back
// A clone keeps running the TypeScript sources (docs/adr/0001); only the packed tarball carries build/.
// build/ holds tsc's declarations (the types of every export) and, in build/bundle/, the code: one esbuild bundle of
// kernel/ and plugins/ whose entries are the package's exports and the launcher's modules (ADR 0057).
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const BUILD = join(ROOT, 'build');
const PKG_FILE = join(ROOT, 'package.json');
/** The clone's package.json while the packed one is on disk; kept outside build/ so a rebuild cannot lose it. */
const SAVED = join(ROOT, '.package.json.prepack');
/** The bundle: entries and chunks side by side in one folder. */
const BUNDLE = join(BUILD, 'bundle');
/** Modules bin/switchyard.js imports from the package besides the exports (literal specifiers there). */
const LAUNCHER_MODULES = ['./kernel/boot/dist-entry.ts', './plugins/presets/full.ts', './plugins/presets/catalog.ts'];

type Exports = Record<string, string | Record<string, string>>;
interface PackageJson {
  exports: Exports;
  scripts?: Record<string, string>;
  devDependencies?: Record<string, string>;
  allowScripts?: unknown;
  [key: string]: unknown;
}

const SOURCE_TARGET = /^\.\/(kernel|plugins)\/.*\.ts$/;

/** `./kernel/sdk/index.ts` → `kernel.sdk.index`: the name of that module's entry in build/bundle/. */
export function bundleEntryName(source: string): string {
  return source.replace(/^\.\//, '').replace(/\.ts$/, '').replaceAll('/', '.');
}

/** `./kernel/sdk/index.ts` → types from tsc in build/, code from the bundle; other targets (package.json) unchanged. */
export function packedExports(exports: Exports): Exports {
  const out: Exports = {};
  for (const [key, target] of Object.entries(exports)) {
    if (typeof target !== 'string' || !SOURCE_TARGET.test(target)) {
      out[key] = target;
      continue;
    }
    out[key] = { types: `./build/${target.slice(2, -3)}.d.ts`, default: `./build/bundle/${bundleEntryName(target)}.js` };
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

/** The admin UI's page, whose per-policy links name the docs a package ships. */
const UI_APP = join(ROOT, 'kernel/admin/ui/assets/app.js');

/**
 * The docs the admin UI links to (`'security.md'`, … in its page): of docs/, only these are shipped (under
 * build/docs/, served at /ui/docs/). The rest (perf notes, ADRs, the reference) stays in the repository.
 */
export function uiLinkedDocs(): string[] {
  return [...new Set([...readFileSync(UI_APP, 'utf8').matchAll(/'([a-z0-9-]+\.md)'/g)].map((m) => m[1]!))].sort();
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
      if (from === join(ROOT, 'docs')) {
        for (const name of uiLinkedDocs()) cpSync(join(from, name), join(to, name));
        copied.push(`docs/{${uiLinkedDocs().join(',')}}`);
        continue;
      }
      cpSync(from, to, { recursive: true });
      copied.push(relative(ROOT, from));
    }
  }
  return copied;
}

/**
 * A module's `new URL('./rel', import.meta.url)` names a file beside its source, which copyRuntimeAssets put at the
 * same place under build/. In the bundle the module's code lands in build/bundle/, so the relative path is rewritten
 * to reach that copy from there.
 */
const assetUrls: esbuild.Plugin = {
  name: 'switchyard-asset-urls',
  setup(b) {
    const pattern = /new URL\(\s*(['"])(\.{1,2}\/[^'"]*)\1\s*,\s*import\.meta\.url\s*\)/g;
    b.onLoad({ filter: /[\\/](kernel|plugins)[\\/].*\.ts$/ }, (args) => {
      const text = readFileSync(args.path, 'utf8');
      // The bundle moves the module: a path computed from its own location would point into build/bundle/.
      if (/import\.meta\.(dirname|filename)\b/.test(text)) {
        return { errors: [{ text: `${relative(ROOT, args.path)} uses import.meta.dirname/filename; name files beside it with new URL('./…', import.meta.url)` }] };
      }
      if (!text.includes('import.meta.url')) return undefined;
      const contents = text.replace(pattern, (_all, q: string, rel: string) => {
        const copy = join(BUILD, relative(ROOT, resolve(dirname(args.path), rel)));
        const from = relative(BUNDLE, copy).split('\\').join('/');
        return `new URL(${q}${from.startsWith('.') ? from : `./${from}`}${rel.endsWith('/') ? '/' : ''}${q}, import.meta.url)`;
      });
      return { contents, loader: 'ts' };
    });
  },
};

/**
 * kernel/ and plugins/ as one ES module bundle (ADR 0057): one file per export and per launcher module, the code they
 * share in chunks beside them, so a third-party plugin's `switchyard/sdk` is the same module instances as the
 * kernel's. npm dependencies stay external (installed beside the package). The quickstart loads 46 of its files
 * instead of ~280 modules.
 */
async function bundle(exports: Exports): Promise<void> {
  const pkg = JSON.parse(readFileSync(PKG_FILE, 'utf8')) as { dependencies?: Record<string, string>; optionalDependencies?: Record<string, string> };
  const deps = [...Object.keys(pkg.dependencies ?? {}), ...Object.keys(pkg.optionalDependencies ?? {})];
  const sources = [...new Set([...Object.values(exports).filter((t): t is string => typeof t === 'string' && SOURCE_TARGET.test(t)), ...LAUNCHER_MODULES])];
  const result = await esbuild.build({
    absWorkingDir: ROOT,
    entryPoints: sources.map((source) => ({ in: source, out: bundleEntryName(source) })),
    outdir: BUNDLE,
    chunkNames: '[name]-[hash]',
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node22',
    // `switchyard/sdk` inside the sources resolves (self-reference, the clone's package.json still on disk) to the
    // SDK's source, bundled once; everything the package depends on is required at run time.
    external: [...deps, ...deps.map((d) => `${d}/*`)],
    plugins: [assetUrls],
    logLevel: 'silent',
    // Maps beside the files, without the sources' text: stacks printed by the gateway are mapped when printed
    // (kernel/telemetry/readable-stack.ts), or by Node with NODE_OPTIONS=--enable-source-maps (ADR 0065).
    sourcemap: 'linked',
    sourcesContent: false,
  });
  if (result.errors.length > 0) throw new Error(result.errors.map((e) => e.text).join('\n'));
  for (const source of sources) {
    if (!existsSync(join(BUNDLE, `${bundleEntryName(source)}.js`))) throw new Error(`the bundle has no entry for ${source}`);
  }
}

/** tsc's JavaScript, once the bundle carries the code: only declarations, JSON and runtime assets stay in build/. */
function removeEmittedJs(dir: string): void {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const full = join(dir, e.name);
    if (e.isDirectory()) {
      if (full !== BUNDLE) removeEmittedJs(full);
    } else if (e.name.endsWith('.js') && existsSync(`${full.slice(0, -3)}.d.ts`)) unlinkSync(full);
  }
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

export async function build(log: (line: string) => void = () => {}): Promise<void> {
  if (restore()) log('restored package.json left by an interrupted pack');
  rmSync(BUILD, { recursive: true, force: true });
  const tsc = join(dirname(createRequire(import.meta.url).resolve('typescript/package.json')), 'bin/tsc');
  const run = spawnSync(process.execPath, [tsc, '-p', join(ROOT, 'tsconfig.build.json')], { cwd: ROOT, encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`tsc -p tsconfig.build.json failed (exit ${run.status}):\n${run.stdout}${run.stderr}`);
  for (const asset of copyRuntimeAssets()) log(`  asset ${asset}`);
  rewriteDeclarations(BUILD);
  if (!existsSync(join(BUILD, 'kernel/boot/dist-entry.d.ts'))) throw new Error('build/ holds no kernel/boot/dist-entry.d.ts');

  const text = readFileSync(PKG_FILE, 'utf8');
  await bundle((JSON.parse(text) as PackageJson).exports);
  removeEmittedJs(BUILD);
  log(`bundled kernel/ and plugins/ into ${relative(ROOT, BUNDLE)}/ (${readdirSync(BUNDLE).length} files)`);
  const packed = packedPackageJson(JSON.parse(text) as PackageJson);
  mkdirSync(dirname(SAVED), { recursive: true });
  writeFileSync(SAVED, text);
  writeFileSync(PKG_FILE, `${JSON.stringify(packed, null, 2)}\n`);
  log('package.json points at build/ until postpack');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  try {
    if (process.argv.includes('--restore')) restore();
    else await build((line) => process.stderr.write(`${line}\n`));
  } catch (err) {
    restore();
    process.stderr.write(`build-package: ${(err as Error).message}\n`);
    process.exitCode = 1;
  }
}
