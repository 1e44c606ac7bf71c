import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ErrorCode } from '../sdk/index.ts';
import type { PluginSource } from './registry.ts';
import { PluginRegistryError } from './registry.ts';

export interface LoadedPluginModule {
  readonly plugins: readonly unknown[];
  readonly source: PluginSource;
}

async function packageNameOf(entryFile: string): Promise<string | undefined> {
  let dir = dirname(entryFile);
  for (;;) {
    try {
      const pkg = JSON.parse(await readFile(join(dir, 'package.json'), 'utf8')) as { name?: string; version?: string };
      if (pkg.name) return pkg.version ? `${pkg.name}@${pkg.version}` : pkg.name;
    } catch {
      // no package.json here; keep walking up
    }
    const parent = dirname(dir);
    if (parent === dir) return undefined;
    dir = parent;
  }
}

/**
 * Load third-party plugin modules named in `config.plugins`: package names or paths, resolved from the
 * config file's directory. The default export is one plugin or an array of plugins.
 */
export async function loadPluginModules(specifiers: readonly string[], fromDir: string): Promise<LoadedPluginModule[]> {
  const require = createRequire(join(fromDir, 'noop.js'));
  const loaded: LoadedPluginModule[] = [];
  for (const spec of specifiers) {
    let resolved: string;
    try {
      resolved = require.resolve(spec.startsWith('.') || spec.startsWith('/') ? join(fromDir, spec) : spec);
    } catch (err) {
      throw new PluginRegistryError(ErrorCode.pluginLoad, `cannot find plugin module \`${spec}\` from ${fromDir}: ${(err as Error).message.split('\n')[0]}`);
    }
    let mod: { default?: unknown };
    try {
      mod = (await import(pathToFileURL(resolved).href)) as { default?: unknown };
    } catch (err) {
      throw new PluginRegistryError(ErrorCode.pluginLoad, `plugin module \`${spec}\` failed to load: ${(err as Error).message}`);
    }
    const exported = mod.default;
    const name = (await packageNameOf(resolved)) ?? spec;
    loaded.push({ plugins: Array.isArray(exported) ? exported : [exported], source: { name, module: spec } });
  }
  return loaded;
}
