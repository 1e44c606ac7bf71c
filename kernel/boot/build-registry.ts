import { dirname } from 'node:path';
import { parseConfigSource } from '../config/config-source.ts';
import { expandEnv } from '../config/expand-env.ts';
import { PluginRegistry } from '../registry/registry.ts';
import { loadPluginModules } from '../registry/load-plugin-modules.ts';

/**
 * Read `config.plugins` before full validation: the schema depends on which plugins are loaded. `${VAR}` is
 * expanded as in the full load; a syntax or env problem is left for the full load to report with its position.
 */
export function preloadPluginList(text: string, env: NodeJS.ProcessEnv = process.env): string[] {
  const source = parseConfigSource('<preload>', text);
  if (source.doc.errors.length > 0 || expandEnv(source, env).length > 0) return [];
  const doc = source.doc.toJS() as { config?: { plugins?: unknown } } | null;
  const list = doc?.config?.plugins;
  return Array.isArray(list) ? list.filter((p): p is string => typeof p === 'string') : [];
}

/** The registry for one process: the distribution's preset, then third-party modules from `config.plugins`. */
export async function buildRegistry(preset: readonly unknown[], thirdParty: readonly string[], configFile: string | undefined): Promise<PluginRegistry> {
  const registry = new PluginRegistry();
  for (const plugin of preset) registry.register(plugin, { name: 'switchyard' });
  if (thirdParty.length) {
    const modules = await loadPluginModules(thirdParty, configFile ? dirname(configFile) : process.cwd());
    for (const mod of modules) for (const plugin of mod.plugins) registry.register(plugin, mod.source);
  }
  return registry.finalize();
}
