import { dirname } from 'node:path';
import { parseConfigText, pluginListOf } from '../config/load-config.ts';
import { PluginRegistry } from '../registry/registry.ts';
import { loadPluginModules } from '../registry/load-plugin-modules.ts';

/**
 * Read `config.plugins` before full validation: the schema depends on which plugins are loaded. `${VAR}` is
 * expanded as in the full load; a syntax or env problem is left for the full load to report with its position.
 */
export function preloadPluginList(text: string, env: NodeJS.ProcessEnv = process.env): string[] {
  let parsed;
  try {
    parsed = parseConfigText('<preload>', text, env);
  } catch {
    return [];
  }
  return pluginListOf(parsed);
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
