import * as nodeModule from 'node:module';
import { createRequire } from 'node:module';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ErrorCode, FILE_SIZE_LIMITS, readLocalFile, settleWithin } from '../sdk/index.ts';
import type { PluginSource } from './registry.ts';
import { PluginRegistryError } from './registry.ts';

/** How long a plugin module's import (its top-level code) may take (ADR 0144). */
const PLUGIN_IMPORT_DEADLINE_MS = 30_000;

export interface LoadedPluginModule {
  readonly plugins: readonly unknown[];
  readonly source: PluginSource;
}

async function packageNameOf(entryFile: string): Promise<string | undefined> {
  let dir = dirname(entryFile);
  for (;;) {
    try {
      const pkg = JSON.parse(await readLocalFile(join(dir, 'package.json'), FILE_SIZE_LIMITS.manifest)) as { name?: string; version?: string };
      if (pkg.name) return pkg.version ? `${pkg.name}@${pkg.version}` : pkg.name;
    } catch {
      // no package.json here; keep walking up
    }
    const parent = dirname(dir);
    if (parent === dir) return undefined;
    dir = parent;
  }
}

const HOST_PACKAGE = 'switchyard';
let hostFallbackInstalled = false;

/**
 * A plugin package peer-depends on `switchyard`. Installed under the app's node_modules it finds the app's copy
 * the normal way; linked (`npm link`, a workspace, a symlink) its real path lies outside the app and Node's
 * resolution of `switchyard/sdk` fails. Then, and only then, resolve `switchyard` and `switchyard/*` as this
 * running gateway's own package (a self-reference from this file), so plugin and kernel share one SDK.
 * Needs `module.registerHooks` (Node 22.15+, 23.5+); older Nodes keep the plain behaviour.
 */
function installHostPackageFallback(): void {
  if (hostFallbackInstalled) return;
  hostFallbackInstalled = true;
  const register = (nodeModule as { registerHooks?: typeof nodeModule.registerHooks }).registerHooks;
  if (typeof register !== 'function') return;
  const self = import.meta.url;
  register({
    resolve(specifier, context, nextResolve) {
      if (specifier !== HOST_PACKAGE && !specifier.startsWith(`${HOST_PACKAGE}/`)) return nextResolve(specifier, context);
      try {
        return nextResolve(specifier, context);
      } catch (err) {
        const code = (err as { code?: string }).code;
        if (code !== 'ERR_MODULE_NOT_FOUND' && code !== 'MODULE_NOT_FOUND') throw err;
        return nextResolve(specifier, { ...context, parentURL: self });
      }
    },
  });
}

/** Errors of an ES module parsed as CommonJS. */
const CJS_PARSED = /Cannot use import statement outside a module|Unexpected token 'export'/;
/** `.mts` for a TypeScript file (Node strips its types outside node_modules): an `.mjs` one would keep them. */
const esmHint = (file: string): string =>
  ` (a plugin is an ES module: name the file \`${/\.ts$/.test(file) ? '.mts' : '.mjs'}\`, or set "type": "module" in the package.json nearest to it)`;

/**
 * A package importing `switchyard/slots/<name>` that this distribution does not export: a trimmed distribution
 * exports the slot modules of the plugins it has (ADR 0144), so the package fills a slot of one it left out.
 */
function missingSlotHint(err: unknown): string {
  if ((err as { code?: unknown }).code !== 'ERR_PACKAGE_PATH_NOT_EXPORTED') return '';
  const slot = /Package subpath '\.\/(slots\/[\w-]+)' is not defined by "exports" in \S*[\\/]switchyard[\\/]package\.json/.exec((err as Error).message)?.[1];
  return slot ? ` (this distribution has no \`switchyard/${slot}\`: the package fills a slot of a first-party plugin it leaves out; use a distribution with that plugin, such as the full one)` : '';
}

/**
 * Load third-party plugin modules named in `config.plugins`: package names or paths, resolved from the
 * config file's directory. The default export is one plugin or an array of plugins.
 */
export async function loadPluginModules(specifiers: readonly string[], fromDir: string): Promise<LoadedPluginModule[]> {
  if (specifiers.length > 0) installHostPackageFallback();
  const require = createRequire(join(fromDir, 'noop.js'));
  const loaded: LoadedPluginModule[] = [];
  for (const spec of specifiers) {
    let resolved: string;
    try {
      resolved = require.resolve(spec.startsWith('.') || isAbsolute(spec) ? resolve(fromDir, spec) : spec);
    } catch (err) {
      // A package name (not a path) is installed beside the config, where it is resolved from.
      const install = /^(?:@[\w.-]+\/)?[\w.-]+$/.test(spec) ? `; install it where the config is: \`npm install ${spec}\` in ${fromDir}` : '';
      throw new PluginRegistryError(ErrorCode.pluginLoad, `cannot find plugin module \`${spec}\` from ${fromDir}: ${(err as Error).message.split('\n')[0]}${install}`, spec);
    }
    let mod: { default?: unknown };
    try {
      // A top-level await that never settles would end the process with Node's "unsettled top-level await" (exit 13)
      // or hold the start for ever (ADR 0144).
      const loading = import(pathToFileURL(resolved).href) as Promise<{ default?: unknown }>;
      mod = await settleWithin(loading, PLUGIN_IMPORT_DEADLINE_MS, () => new PluginRegistryError(ErrorCode.pluginLoad, `plugin module \`${spec}\` did not finish loading within ${PLUGIN_IMPORT_DEADLINE_MS / 1000}s (a top-level await that never settles?)`, spec));
    } catch (err) {
      if (err instanceof PluginRegistryError) throw err;
      // A .js file Node read as CommonJS: `npm init -y` writes "type": "commonjs" into the app's package.json.
      const hint = err instanceof SyntaxError && CJS_PARSED.test(err.message) ? esmHint(resolved) : missingSlotHint(err);
      throw new PluginRegistryError(ErrorCode.pluginLoad, `plugin module \`${spec}\` failed to load: ${(err as Error).message}${hint}`, spec);
    }
    const exported = mod.default;
    const name = (await packageNameOf(resolved)) ?? spec;
    loaded.push({ plugins: Array.isArray(exported) ? exported : [exported], source: { name, module: spec } });
  }
  return loaded;
}
