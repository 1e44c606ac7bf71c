import { dirname, resolve } from 'node:path';
import { parseConfigText, pluginListOf } from '../config/load-config.ts';
import { ConfigLoadError } from '../config/format-issues.ts';
import { positionRedacted } from '../config/redact-issues.ts';
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

/**
 * `config.plugins` for `switchyard schema|plugins -f FILE` (ADR 0154): a config that cannot be read (a YAML syntax
 * error, an unset variable) stops the command with its positioned error, where a start's preload leaves it to the full
 * load; a schema silently without the config's plugins would refuse their keys in the editor.
 */
export function configPluginList(file: string, text: string, env: NodeJS.ProcessEnv = process.env): string[] {
  const parsed = parseConfigText(file, text, env);
  if (parsed.envIssues.length > 0) throw new ConfigLoadError(positionRedacted(parsed.source, parsed.envIssues, parsed.secrets));
  return pluginListOf(parsed);
}

/** The registry for one process: the distribution's preset, then third-party modules from `config.plugins`. */
export async function buildRegistry(preset: readonly unknown[], thirdParty: readonly string[], configFile: string | undefined): Promise<PluginRegistry> {
  const registry = new PluginRegistry();
  for (const plugin of preset) registry.register(plugin, { name: 'switchyard' });
  if (thirdParty.length) {
    // An embedder may name the file relative to the working directory (`config: { file: 'test/config.yaml' }`).
    const modules = await loadPluginModules(thirdParty, configFile ? dirname(resolve(configFile)) : process.cwd());
    for (const mod of modules) for (const plugin of mod.plugins) registry.register(plugin, mod.source);
  }
  return registry.finalize();
}
