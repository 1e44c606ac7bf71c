import { dirname, resolve } from 'node:path';
import { parseConfigText, pluginListOf } from '../config/load-config.ts';
import { ConfigLoadError } from '../config/format-issues.ts';
import { positionRedacted } from '../config/redact-issues.ts';
import { PluginRegistry, PluginRegistryError } from '../registry/registry.ts';
import type { ErrorCodeValue } from '../sdk/index.ts';
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

/**
 * A plugin module that failed to load, positioned at its `config.plugins` entry in `text` (file:line:col and a code
 * frame, as every config problem is shown); undefined for another error, or a text that does not name the module.
 */
export function placePluginError(err: unknown, file: string, text: string, env: NodeJS.ProcessEnv = process.env): ConfigLoadError | undefined {
  if (!(err instanceof PluginRegistryError) || err.module === undefined) return undefined;
  const parsed = parseConfigText(file, text, env, true);
  const list = (parsed.value as { config?: { plugins?: unknown } } | null)?.config?.plugins;
  const at = Array.isArray(list) ? list.indexOf(err.module) : -1;
  if (at < 0) return undefined;
  const issue = { code: err.code as ErrorCodeValue, path: ['config', 'plugins', at], message: err.message };
  return new ConfigLoadError(positionRedacted(parsed.source, [issue], parsed.secrets));
}
