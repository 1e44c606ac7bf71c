// Build a trimmed distribution: the CLI with one preset, bundled into plain JavaScript (ARCHITECTURE.md §9,
// docs/adr/0012). Run with `npm run build:dist -- --preset NAME [--out DIR] [--minify]`.
import { spawnSync } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import * as esbuild from 'esbuild';
import { isPlugin } from '../kernel/sdk/plugin.ts';
import { pluginLabel } from '../kernel/sdk/plugin.ts';
import type { Plugin } from '../kernel/sdk/plugin.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const PRESETS_DIR = join(ROOT, 'plugins/presets');
const ROOT_PKG = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  version: string;
  exports: Record<string, string>;
  license?: string;
  engines?: Record<string, string>;
  dependencies?: Record<string, string>;
};

/**
 * npm packages left out of the bundle and installed beside it instead (the generated package.json lists those
 * the preset reaches). Empty: every dependency today is plain JavaScript that bundles (docs/adr/0012). A
 * package with a native addon, or one that reads its own files at run time, goes here.
 */
export const EXTERNAL_PACKAGES: readonly string[] = [];

/** In every output file: `require` for the CommonJS dependencies bundled into ES modules (node: builtins). */
const BANNER = "import { createRequire as __switchyardCreateRequire } from 'node:module'; const require = __switchyardCreateRequire(import.meta.url);";

/**
 * Kernel modules that load a library on first use through `createRequire` (docs/adr/0034). A bundle has no
 * node_modules to require from: their `lazyRequire(...)` calls become plain `require(...)`, which esbuild resolves to
 * the bundled copy and initialises on the first call, so the bundle stays as lazy as the sources.
 */
const LAZY_REQUIRE_MODULES = /[\\/]kernel[\\/](?:config[\\/]ajv-lib|sdk[\\/](?:yaml-lib|js-yaml-lib)|expr[\\/]cel-lib|upstream[\\/]undici-core)\.ts$/;
const LAZY_REQUIRE_DECLARATION = 'const lazyRequire = createRequire(import.meta.url);';

const lazyRequirePlugin: esbuild.Plugin = {
  name: 'switchyard-lazy-require',
  setup(build) {
    build.onLoad({ filter: LAZY_REQUIRE_MODULES }, (args) => {
      const source = readFileSync(args.path, 'utf8');
      if (!source.includes(LAZY_REQUIRE_DECLARATION)) throw new Error(`${args.path} no longer declares \`${LAZY_REQUIRE_DECLARATION}\``);
      return { contents: source.replace(LAZY_REQUIRE_DECLARATION, '').replaceAll('lazyRequire(', 'require('), loader: 'ts' };
    });
  },
};

const ENTRY = 'switchyard-dist:entry';
/** A module of one of our esbuild plugin namespaces in the metafile (`switchyard-cjs:node_modules/...`), not a file. */
const VIRTUAL = /^switchyard-[a-z]+:/;

export interface BuildOptions {
  /** A file name in plugins/presets/ without `.ts` (`full`, `minimal`), or the path of a preset module. */
  readonly preset: string;
  /** Output folder; default dist/<preset>. */
  readonly out?: string;
  readonly minify?: boolean;
  /** Progress lines; default none. */
  readonly log?: (line: string) => void;
}

export interface PluginSummary {
  /** The plugin's kind, or for a variant the slot it fills (`guard`, `llmProvider`). */
  readonly kind: string;
  readonly key: string;
  readonly description: string;
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

/** Presets in plugins/presets/: every module whose default export (or one named export) is a list of plugins. */
export async function listPresets(): Promise<string[]> {
  const names: string[] = [];
  for (const file of readdirSync(PRESETS_DIR).sort()) {
    if (!file.endsWith('.ts') || file.endsWith('.test.ts') || file.endsWith('.d.ts')) continue;
    if ((await presetExport(join(PRESETS_DIR, file))) !== undefined) names.push(file.slice(0, -3));
  }
  return names;
}

function isPluginList(value: unknown): value is readonly unknown[] {
  return Array.isArray(value) && value.length > 0 && value.every(isPlugin);
}

/** The name of the export holding the plugin list: `default`, else the only named export that is one. */
async function presetExport(file: string): Promise<{ name: string; plugins: readonly unknown[] } | undefined> {
  const mod = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
  if (isPluginList(mod.default)) return { name: 'default', plugins: mod.default };
  const lists = Object.entries(mod).filter(([, v]) => isPluginList(v));
  return lists.length === 1 ? { name: lists[0]![0], plugins: lists[0]![1] as readonly unknown[] } : undefined;
}

function presetFile(preset: string): { name: string; file: string } {
  if (/[\\/]/.test(preset) || /\.[cm]?[jt]s$/.test(preset)) {
    const file = resolve(preset);
    return { name: file.replace(/^.*[\\/]/, '').replace(/\.[cm]?[jt]s$/, ''), file };
  }
  if (!/^[A-Za-z0-9][\w.-]*$/.test(preset)) throw new Error(`invalid preset name \`${preset}\``);
  return { name: preset, file: join(PRESETS_DIR, `${preset}.ts`) };
}

/** `node_modules/@scope/pkg/x.js` → `@scope/pkg` (the innermost node_modules). */
function packageOf(input: string): { name: string; dir: string } | undefined {
  const parts = input.split(/[\\/]/);
  const at = parts.lastIndexOf('node_modules');
  if (at < 0 || at + 1 >= parts.length) return undefined;
  const scoped = parts[at + 1]!.startsWith('@');
  const name = parts.slice(at + 1, at + (scoped ? 3 : 2)).join('/');
  return { name, dir: parts.slice(0, at + (scoped ? 3 : 2)).join('/') };
}

interface PackageJson {
  name?: string;
  version?: string;
  license?: string;
  engines?: { node?: string };
}

function packageJson(dir: string): PackageJson {
  try {
    return JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as PackageJson;
  } catch {
    return {};
  }
}

/**
 * `new URL('<relative>', import.meta.url)` in a bundled module names a file beside that module; in the bundle,
 * import.meta.url is the output file the module landed in. Copy each such file or folder to the same relative
 * place beside that output file (plugins/lib/envoy-grpc reads the vendored protos this way).
 */
/**
 * Files a module reads only when present, outside the folder a bundle copies: the admin UI's per-policy docs links
 * answer "not part of this installation" without them (docs/admin-ui.md), so a trimmed distribution leaves them out.
 */
const OPTIONAL_OUTSIDE = new Set(['kernel/admin/ui/ui-server.ts ../../../docs/']);

function copyAssets(metafile: esbuild.Metafile, out: string, log: (line: string) => void): string[] {
  const copied: string[] = [];
  const pattern = /new URL\(\s*(['"])(\.{1,2}\/[^'"]*)\1\s*,\s*import\.meta\.url\s*\)/g;
  for (const [output, meta] of Object.entries(metafile.outputs)) {
    if (!output.endsWith('.mjs')) continue;
    for (const input of Object.keys(meta.inputs)) {
      if (VIRTUAL.test(input) || !/\.[cm]?[jt]s$/.test(input)) continue;
      const source = readFileSync(join(ROOT, input), 'utf8');
      for (const match of source.matchAll(pattern)) {
        const from = resolve(ROOT, dirname(input), match[2]!);
        const to = resolve(ROOT, dirname(output), match[2]!);
        if (!existsSync(from)) {
          log(`  warning: ${input} names ${match[2]} beside itself, which does not exist; nothing copied`);
          continue;
        }
        if (relative(out, to).startsWith('..')) {
          if (OPTIONAL_OUTSIDE.has(`${input} ${match[2]}`)) {
            log(`  note: ${input} reads ${match[2]} when present; a distribution goes without it`);
            continue;
          }
          throw new Error(`${input} reads ${match[2]} beside itself, which would land outside ${out} (its code is in ${relative(out, resolve(ROOT, output))})`);
        }
        if (existsSync(to)) continue;
        cpSync(from, to, { recursive: true, filter: (f) => !f.endsWith('.test.ts') });
        copied.push(relative(out, to));
        log(`  asset ${relative(ROOT, from)} -> ${relative(out, to) || '.'}`);
      }
    }
  }
  return copied;
}

/** The licence texts of the bundled packages, as their licences ask of a redistribution. */
function thirdPartyNotices(packages: Map<string, string>): string {
  const parts: string[] = [
    'Third-party software bundled into this distribution of Switchyard, with the licence texts it ships.\n',
  ];
  for (const [name, dir] of [...packages].sort(([a], [b]) => a.localeCompare(b))) {
    const pkg = packageJson(join(ROOT, dir));
    const license = readdirSync(join(ROOT, dir)).find((f) => /^(?:licen[cs]e|copying|notice)(?:[.-].*)?$/i.test(f));
    parts.push(`${'='.repeat(78)}\n${name}@${pkg.version ?? '?'} (${pkg.license ?? 'see package'})\n${'='.repeat(78)}\n`);
    parts.push(license ? `${readFileSync(join(ROOT, dir, license), 'utf8').trim()}\n` : '(no licence file in the package)\n');
  }
  return parts.join('\n');
}

/**
 * Modules (paths as in the metafile) that esbuild parsed as CommonJS and that start a chunk of their own because
 * something loads them with import(), with the specifiers used for them.
 */
function cjsDynamicImports(metafile: esbuild.Metafile): Map<string, Set<string>> {
  const found = new Map<string, Set<string>>();
  for (const meta of Object.values(metafile.outputs)) {
    if (meta.entryPoint && metafile.inputs[meta.entryPoint]?.format === 'cjs') found.set(meta.entryPoint, new Set());
  }
  for (const meta of Object.values(metafile.inputs)) {
    for (const imp of meta.imports) {
      if (imp.kind === 'dynamic-import' && imp.original !== undefined) found.get(imp.path)?.add(imp.original);
    }
  }
  return found;
}

/**
 * Resolve `import()` of the given CommonJS modules to an ES module that re-exports module.exports as default and
 * each export name Node finds in it (Node's own import() of the module, in this process, says which).
 */
function cjsWrapperPlugin(modules: ReadonlyMap<string, ReadonlySet<string>>): esbuild.Plugin {
  const specifiers = new Set([...modules.values()].flatMap((s) => [...s]));
  const escape = (s: string): string => s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
  const filter = new RegExp(`^(?:${[...specifiers].map(escape).join('|')})$`);
  const skip = Symbol('resolving');
  return {
    name: 'switchyard-cjs-dynamic-import',
    setup(build) {
      build.onResolve({ filter }, async (args) => {
        if (args.kind !== 'dynamic-import' || args.pluginData === skip) return undefined;
        const r = await build.resolve(args.path, { kind: args.kind, importer: args.importer, resolveDir: args.resolveDir, namespace: args.namespace, pluginData: skip });
        const path = relative(ROOT, r.path).split(sep).join('/');
        if (r.errors.length > 0 || r.external || !modules.has(path)) return undefined;
        return { path, namespace: 'switchyard-cjs' };
      });
      build.onLoad({ filter: /.*/, namespace: 'switchyard-cjs' }, async (args) => {
        const file = join(ROOT, args.path);
        const ns = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
        const names = Object.keys(ns).filter((n) => n !== 'default' && n !== 'module.exports');
        const lines = [`const m = require(${JSON.stringify(`./${basename(file)}`)});`, 'export default m;'];
        names.forEach((n, i) => lines.push(`const e${i} = m[${JSON.stringify(n)}];`, `export { e${i} as ${JSON.stringify(n)} };`));
        return { contents: lines.join('\n'), loader: 'js', resolveDir: dirname(file) };
      });
    },
  };
}

/**
 * The Node versions the bundle runs on: the highest `>=x.y.z` floor among Switchyard's own `engines.node` and
 * those of the bundled packages (undici 8, for one, would ask for 22.19). Ranges of another form are not combined.
 */
function nodeEngine(packages: Map<string, string>): { range: string; from: string } {
  const floor = (range: string | undefined): number[] | undefined => {
    const m = /^\s*>=\s*v?(\d+)(?:\.(\d+))?(?:\.(\d+))?\s*$/.exec(range ?? '');
    return m ? [Number(m[1]), Number(m[2] ?? 0), Number(m[3] ?? 0)] : undefined;
  };
  const newer = (a: number[], b: number[]): boolean => a[0]! !== b[0]! ? a[0]! > b[0]! : a[1]! !== b[1]! ? a[1]! > b[1]! : a[2]! > b[2]!;
  const own = ROOT_PKG.engines?.node ?? '>=22.12';
  let best = { range: own, from: 'switchyard', v: floor(own) ?? [0, 0, 0] };
  for (const [name, dir] of packages) {
    const range = packageJson(join(ROOT, dir)).engines?.node;
    const v = floor(range);
    if (v && newer(v, best.v)) best = { range: `>=${v.join('.')}`, from: name, v };
  }
  return { range: best.range, from: best.from };
}

/** Refuse to wipe a folder that is not an earlier build output. */
function prepareOut(out: string): void {
  if (existsSync(out)) {
    if (!statSync(out).isDirectory()) throw new Error(`${out} exists and is not a folder`);
    const entries = readdirSync(out);
    if (entries.length > 0 && !entries.includes('switchyard.mjs')) throw new Error(`${out} is not empty and holds no earlier build; choose another --out`);
    rmSync(out, { recursive: true, force: true });
  }
  mkdirSync(out, { recursive: true });
}

/**
 * The package's `switchyard/slots/*` modules whose slots some plugin of the preset declares (ADR 0144): a guard,
 * provider or transport package imports its helper from there, and can only fill a slot the distribution has.
 */
async function slotModulesOf(plugins: readonly Plugin[]): Promise<{ name: string; source: string }[]> {
  const declared = new Set(plugins.flatMap((p) => (p.kind === 'slot' ? [p.name] : (p.slots ?? []).map((s) => s.name))));
  const modules: { name: string; source: string }[] = [];
  for (const [key, source] of Object.entries(ROOT_PKG.exports)) {
    if (!key.startsWith('./slots/')) continue;
    const exported = Object.values((await import(join(ROOT, source))) as Record<string, unknown>);
    if (exported.some((v) => isPlugin(v) && v.kind === 'slot' && declared.has(v.name))) modules.push({ name: key.slice(2), source });
  }
  return modules;
}

/** Bundle the CLI with one preset into `out`: switchyard.mjs, chunks/, switchyard.schema.json, package.json. */
export async function buildDist(options: BuildOptions): Promise<BuildResult> {
  const started = performance.now();
  const log = options.log ?? ((): void => {});
  const { name, file } = presetFile(options.preset);
  if (!existsSync(file)) throw new Error(`no preset \`${options.preset}\` (${relative(ROOT, file)}); presets: ${(await listPresets()).join(', ')}`);
  const found = await presetExport(file);
  if (!found) throw new Error(`${relative(ROOT, file)} exports no list of plugins (a default export, or exactly one named export)`);
  const plugins = found.plugins.map((p) => {
    const plugin = p as Plugin;
    return { kind: pluginLabel(plugin), key: plugin.key, description: plugin.description ?? '' };
  });
  const out = resolve(options.out ?? join(ROOT, 'dist', name));
  prepareOut(out);
  const slotModules = await slotModulesOf(found.plugins as readonly Plugin[]);

  const presetSpec = relative(ROOT, file).split(sep).join('/');
  const entrySource = [
    // Runnable as `./switchyard.mjs` (the file is made executable below); esbuild keeps a hashbang first.
    '#!/usr/bin/env node',
    "import { readFileSync } from 'node:fs';",
    "import { fileURLToPath } from 'node:url';",
    "import { nodeVersionProblem } from './bin/check-node.js';",
    "import { missingNodeFlags, withEnvDefaults } from './bin/node-flags.js';",
    "import { startDistribution } from './kernel/boot/dist-entry.ts';",
    // The floor the distribution's package.json names (the highest of Switchyard's and the bundled packages', below);
    // a bundle copied without it checks Switchyard's own.
    `let engines = ${JSON.stringify(ROOT_PKG.engines?.node)};`,
    "try { engines = JSON.parse(readFileSync(new URL('./package.json', import.meta.url), 'utf8')).engines?.node ?? engines; } catch {}",
    'const problem = nodeVersionProblem(engines);',
    'if (problem) {',
    "  process.stderr.write(`switchyard: ${problem}\\n`);",
    '  process.exit(1);',
    '}',
    `await startDistribution({`,
    `  version: ${JSON.stringify(ROOT_PKG.version)},`,
    '  nodeFlags: { missing: missingNodeFlags(process.execArgv, process.env.NODE_OPTIONS), env: withEnvDefaults(process.env) },',
    "  schemaFile: fileURLToPath(new URL('./switchyard.schema.json', import.meta.url)),",
    '  load: async () => ({',
    `    preset: (await import(${JSON.stringify(/^\.\.?\//.test(presetSpec) ? presetSpec : `./${presetSpec}`)})).${found.name},`,
    "    knownKeys: (await import('./plugins/presets/catalog.ts')).FIRST_PARTY_KEYS,",
    '  }),',
    '});',
  ].join('\n');

  const entryPlugin: esbuild.Plugin = {
    name: 'switchyard-dist-entry',
    setup(build) {
      build.onResolve({ filter: /^switchyard-dist:entry$/ }, (args) => ({ path: args.path, namespace: 'switchyard-dist' }));
      build.onLoad({ filter: /.*/, namespace: 'switchyard-dist' }, () => ({ contents: entrySource, loader: 'ts', resolveDir: ROOT }));
    },
  };

  const buildOptions: esbuild.BuildOptions & { metafile: true; write: false } = {
    absWorkingDir: ROOT,
    entryPoints: [
      { in: ENTRY, out: 'switchyard' },
      // switchyard/sdk for third-party plugins (config.plugins): the same module instances as the bundled kernel.
      { in: './kernel/sdk/index.ts', out: 'sdk' },
      // switchyard/slots/* of the slots the preset declares, for third-party guards, providers and transports.
      ...slotModules.map((m) => ({ in: m.source, out: m.name })),
    ],
    outdir: out,
    outExtension: { '.js': '.mjs' },
    chunkNames: 'chunks/[name]-[hash]',
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node22',
    // ES module builds first where a package without `exports` ships both (the AWS SDK): ES semantics, and
    // fewer CommonJS modules behind dynamic imports (below).
    mainFields: ['module', 'main'],
    sourcemap: true,
    minify: options.minify === true,
    keepNames: options.minify === true,
    external: [...EXTERNAL_PACKAGES, ...EXTERNAL_PACKAGES.map((p) => `${p}/*`)],
    banner: { js: BANNER },
    metafile: true,
    write: false,
    logLevel: 'silent',
  };
  let result = await esbuild.build({ ...buildOptions, plugins: [entryPlugin, lazyRequirePlugin] });
  // A CommonJS module loaded by a dynamic import() becomes a chunk with only a default export, where Node also
  // gives its named exports: `const { HttpsProxyAgent } = await import('https-proxy-agent')` (gaxios) would get
  // undefined. Build again with such modules behind an ES wrapper that names them.
  const cjsDynamic = cjsDynamicImports(result.metafile);
  if (cjsDynamic.size > 0) {
    log(`  CommonJS behind dynamic import(), wrapped: ${[...cjsDynamic.keys()].join(', ')}`);
    result = await esbuild.build({ ...buildOptions, plugins: [entryPlugin, lazyRequirePlugin, cjsWrapperPlugin(cjsDynamic)] });
    const left = cjsDynamicImports(result.metafile);
    if (left.size > 0) throw new Error(`CommonJS modules still loaded by dynamic import() after wrapping: ${[...left.keys()].join(', ')}`);
  }
  for (const w of result.warnings) log(`  esbuild warning: ${w.text}${w.location ? ` (${w.location.file}:${w.location.line})` : ''}`);
  for (const file of result.outputFiles) {
    mkdirSync(dirname(file.path), { recursive: true });
    writeFileSync(file.path, file.contents);
  }
  chmodSync(join(out, 'switchyard.mjs'), 0o755);
  const metafile = result.metafile;

  // What was bundled, and which external packages the preset reaches.
  const bundledDirs = new Map<string, string>();
  for (const input of Object.keys(metafile.inputs)) {
    const pkg = VIRTUAL.test(input) ? undefined : packageOf(input);
    if (pkg && !bundledDirs.has(pkg.name)) bundledDirs.set(pkg.name, pkg.dir);
  }
  const bundled: Record<string, string> = {};
  for (const [pkgName, dir] of [...bundledDirs].sort(([a], [b]) => a.localeCompare(b))) bundled[pkgName] = packageJson(join(ROOT, dir)).version ?? '?';
  const dependencies: Record<string, string> = {};
  for (const meta of Object.values(metafile.outputs)) {
    for (const imp of meta.imports) {
      if (!imp.external || imp.path.startsWith('node:')) continue;
      const pkgName = imp.path.startsWith('@') ? imp.path.split('/').slice(0, 2).join('/') : imp.path.split('/')[0]!;
      if (!EXTERNAL_PACKAGES.includes(pkgName)) continue;
      dependencies[pkgName] = ROOT_PKG.dependencies?.[pkgName] ?? packageJson(join(ROOT, 'node_modules', pkgName)).version ?? '*';
    }
  }

  copyAssets(metafile, out, log);
  writeFileSync(join(out, 'THIRD-PARTY-NOTICES.txt'), thirdPartyNotices(bundledDirs));

  const engine = nodeEngine(bundledDirs);
  if (engine.from !== 'switchyard') log(`  engines.node ${engine.range} (asked by ${engine.from})`);
  const pkgJson = {
    name: 'switchyard',
    version: ROOT_PKG.version,
    description: `Switchyard, trimmed distribution \`${name}\`: ${plugins.map((p) => p.key).join(', ')}.`,
    license: ROOT_PKG.license,
    type: 'module',
    bin: { switchyard: './switchyard.mjs' },
    exports: { './sdk': './sdk.mjs', ...Object.fromEntries(slotModules.map((m) => [`./${m.name}`, `./${m.name}.mjs`])), './package.json': './package.json' },
    engines: { ...ROOT_PKG.engines, node: engine.range },
    dependencies,
    switchyard: { preset: name, plugins: plugins.map((p) => p.key) },
  };
  writeFileSync(join(out, 'package.json'), `${JSON.stringify(pkgJson, null, 2)}\n`);

  // The schema, from the bundle itself: also proves that it starts, as plain JavaScript.
  const schema = spawnSync(process.execPath, ['--no-experimental-strip-types', join(out, 'switchyard.mjs'), 'schema'], {
    encoding: 'utf8',
    env: { ...process.env, NODE_DISABLE_COMPILE_CACHE: '1' },
    maxBuffer: 64 * 1024 * 1024,
  });
  if (schema.status !== 0) throw new Error(`the bundle failed to print its schema (exit ${schema.status}):\n${schema.stderr}`);
  writeFileSync(join(out, 'switchyard.schema.json'), schema.stdout);

  writeFileSync(join(out, 'README.md'), readme(name, plugins, Object.keys(dependencies), engine.range));

  const files: Record<string, number> = {};
  let totalBytes = 0;
  for (const output of Object.keys(metafile.outputs)) {
    if (!output.endsWith('.mjs')) continue;
    const size = metafile.outputs[output]!.bytes;
    files[relative(out, resolve(ROOT, output)).split(sep).join('/')] = size;
    totalBytes += size;
  }
  return { name, out, plugins, bundled, dependencies, files, totalBytes, millis: Math.round(performance.now() - started) };
}

function readme(name: string, plugins: readonly PluginSummary[], dependencies: readonly string[], node: string): string {
  return `# Switchyard — trimmed distribution \`${name}\`

Built by \`npm run build:dist -- --preset ${name}\` (docs/adr/0012-trimmed-distributions.md). Plain JavaScript for
Node ${node}; no type stripping, no build tools.

    node switchyard.mjs -f config.yaml      # run a gateway
    node switchyard.mjs schema              # the JSON Schema of this distribution (also in switchyard.schema.json)
    node switchyard.mjs plugins             # the plugins installed
    node switchyard.mjs --version

${dependencies.length ? `Install the dependencies left outside the bundle first: \`npm install --omit=dev\` (${dependencies.join(', ')}).\n\n` : 'Every dependency is bundled: copy the folder and run it.\n\n'}A config that uses a first-party plugin left out of this distribution fails with "\`x\` is not installed in this
distribution". Stack traces point at the bundle; \`node --enable-source-maps switchyard.mjs ...\` maps them to the
sources. Third-party plugins (\`config.plugins\`) import \`switchyard/sdk\`, which this package exports (sdk.mjs), and
\`switchyard/slots/*\` for the slots its plugins declare (slots/).
Licences of the bundled packages: THIRD-PARTY-NOTICES.txt.

## Plugins

| kind | key | description |
| --- | --- | --- |
${plugins.map((p) => `| ${p.kind} | \`${p.key}\` | ${p.description.replace(/\|/g, '\\|')} |`).join('\n')}
`;
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
