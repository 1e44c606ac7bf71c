// The esbuild side of a trimmed distribution (bin/build-dist.ts, docs/adr/0012): the generated entry, the plugins
// that keep bundled code behaving as it does unbundled, and the build itself.
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, relative, sep } from 'node:path';
import { pathToFileURL } from 'node:url';
import * as esbuild from 'esbuild';
import { ROOT, ROOT_PKG } from './build-dist-presets.ts';

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

/**
 * `switchyard` and `switchyard/*`, from whichever module imports them: this checkout's module of that export
 * (package.json `exports`). A team's plugin package bundled through its preset would otherwise bring the copy in its
 * own node_modules (the published package): a second SDK beside the kernel's, with classes of its own.
 */
const selfPlugin: esbuild.Plugin = {
  name: 'switchyard-self',
  setup(build) {
    build.onResolve({ filter: /^switchyard(?:\/|$)/ }, (args) => {
      const target = ROOT_PKG.exports[args.path === 'switchyard' ? '.' : `./${args.path.slice('switchyard/'.length)}`];
      if (target === undefined) return { errors: [{ text: `\`${args.path}\` is not an export of switchyard (its package.json \`exports\`)` }] };
      return { path: join(ROOT, target) };
    });
  },
};

const ENTRY = 'switchyard-dist:entry';
/** A module of one of our esbuild plugin namespaces in the metafile (`switchyard-cjs:node_modules/...`), not a file. */
export const VIRTUAL = /^switchyard-[a-z]+:/;

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

/** The generated `switchyard.mjs`: checks the Node version, then starts the CLI with the preset's export `exportName`. */
function entrySource(presetFile: string, exportName: string): string {
  const presetSpec = relative(ROOT, presetFile).split(sep).join('/');
  return [
    // Runnable as `./switchyard.mjs` (the file is made executable below); esbuild keeps a hashbang first.
    '#!/usr/bin/env node',
    "import { readFileSync } from 'node:fs';",
    "import { fileURLToPath } from 'node:url';",
    "import { nodeVersionProblem } from './bin/check-node.js';",
    "import { missingNodeFlags, withEnvDefaults } from './bin/node-flags.js';",
    "import { startDistribution } from './kernel/boot/dist-entry.ts';",
    // The floor the distribution's package.json names (the highest of Switchyard's and the bundled packages');
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
    `    preset: (await import(${JSON.stringify(/^\.\.?\//.test(presetSpec) ? presetSpec : `./${presetSpec}`)})).${exportName},`,
    "    knownKeys: (await import('./plugins/presets/catalog.ts')).FIRST_PARTY_KEYS,",
    '  }),',
    '});',
  ].join('\n');
}

export interface BundleOptions {
  readonly out: string;
  /** The preset module, and the name of its export holding the plugin list. */
  readonly presetFile: string;
  readonly exportName: string;
  /** `switchyard/slots/*` modules to build as entries of their own (`slots/ai` from plugins/lib/slots/ai.ts). */
  readonly slotModules: readonly { name: string; source: string }[];
  /** npm packages left out of the bundle. */
  readonly external: readonly string[];
  readonly minify: boolean;
  readonly log: (line: string) => void;
}

/** Bundle the entry, `switchyard/sdk` and the slot modules into `out` (switchyard.mjs executable); the metafile. */
export async function bundle(options: BundleOptions): Promise<esbuild.Metafile> {
  const { out, slotModules, log } = options;
  const source = entrySource(options.presetFile, options.exportName);
  const entryPlugin: esbuild.Plugin = {
    name: 'switchyard-dist-entry',
    setup(build) {
      build.onResolve({ filter: /^switchyard-dist:entry$/ }, (args) => ({ path: args.path, namespace: 'switchyard-dist' }));
      build.onLoad({ filter: /.*/, namespace: 'switchyard-dist' }, () => ({ contents: source, loader: 'ts', resolveDir: ROOT }));
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
    minify: options.minify,
    keepNames: options.minify,
    external: [...options.external, ...options.external.map((p) => `${p}/*`)],
    banner: { js: BANNER },
    metafile: true,
    write: false,
    logLevel: 'silent',
  };
  let result = await esbuild.build({ ...buildOptions, plugins: [entryPlugin, selfPlugin, lazyRequirePlugin] });
  // A CommonJS module loaded by a dynamic import() becomes a chunk with only a default export, where Node also
  // gives its named exports: `const { HttpsProxyAgent } = await import('https-proxy-agent')` (gaxios) would get
  // undefined. Build again with such modules behind an ES wrapper that names them.
  const cjsDynamic = cjsDynamicImports(result.metafile);
  if (cjsDynamic.size > 0) {
    log(`  CommonJS behind dynamic import(), wrapped: ${[...cjsDynamic.keys()].join(', ')}`);
    result = await esbuild.build({ ...buildOptions, plugins: [entryPlugin, selfPlugin, lazyRequirePlugin, cjsWrapperPlugin(cjsDynamic)] });
    const left = cjsDynamicImports(result.metafile);
    if (left.size > 0) throw new Error(`CommonJS modules still loaded by dynamic import() after wrapping: ${[...left.keys()].join(', ')}`);
  }
  for (const w of result.warnings) log(`  esbuild warning: ${w.text}${w.location ? ` (${w.location.file}:${w.location.line})` : ''}`);
  for (const file of result.outputFiles) {
    mkdirSync(dirname(file.path), { recursive: true });
    writeFileSync(file.path, file.contents);
  }
  chmodSync(join(out, 'switchyard.mjs'), 0o755);
  return result.metafile;
}
