// The presets a trimmed distribution is built from (bin/build-dist.ts, docs/adr/0012): finding them, reading their
// plugin list, and the `switchyard/slots/*` modules their plugins need.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { isPlugin, pluginLabel } from '../kernel/sdk/plugin.ts';
import type { Plugin } from '../kernel/sdk/plugin.ts';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const PRESETS_DIR = join(ROOT, 'plugins/presets');
export const ROOT_PKG = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  version: string;
  exports: Record<string, string>;
  license?: string;
  engines?: Record<string, string>;
  dependencies?: Record<string, string>;
};

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

/** A preset's name and module: a name in plugins/presets/, or the path of a module. */
function presetFile(preset: string): { name: string; file: string } {
  if (/[\\/]/.test(preset) || /\.[cm]?[jt]s$/.test(preset)) {
    const file = resolve(preset);
    return { name: file.replace(/^.*[\\/]/, '').replace(/\.[cm]?[jt]s$/, ''), file };
  }
  if (!/^[A-Za-z0-9][\w.-]*$/.test(preset)) throw new Error(`invalid preset name \`${preset}\``);
  return { name: preset, file: join(PRESETS_DIR, `${preset}.ts`) };
}

/**
 * The package's `switchyard/slots/*` modules whose slots some plugin of the preset declares (ADR 0144): a guard,
 * provider or transport package imports its helper from there, and can only fill a slot the distribution has.
 */
export async function slotModulesOf(plugins: readonly Plugin[]): Promise<{ name: string; source: string }[]> {
  const declared = new Set(plugins.flatMap((p) => (p.kind === 'slot' ? [p.name] : (p.slots ?? []).map((s) => s.name))));
  const modules: { name: string; source: string }[] = [];
  for (const [key, source] of Object.entries(ROOT_PKG.exports)) {
    if (!key.startsWith('./slots/')) continue;
    const exported = Object.values((await import(join(ROOT, source))) as Record<string, unknown>);
    if (exported.some((v) => isPlugin(v) && v.kind === 'slot' && declared.has(v.name))) modules.push({ name: key.slice(2), source });
  }
  return modules;
}

export interface PluginSummary {
  /** The plugin's kind, or for a variant the slot it fills (`guard`, `llmProvider`). */
  readonly kind: string;
  readonly key: string;
  readonly description: string;
}

export interface Preset {
  readonly name: string;
  readonly file: string;
  /** The export holding the plugin list (`default`, or the only named export that is one). */
  readonly exportName: string;
  readonly plugins: readonly Plugin[];
  readonly summaries: readonly PluginSummary[];
}

/** The preset `preset` names (see BuildOptions.preset), imported; an error names the presets there are. */
export async function readPreset(preset: string): Promise<Preset> {
  const { name, file } = presetFile(preset);
  if (!existsSync(file)) throw new Error(`no preset \`${preset}\` (${relative(ROOT, file)}); presets: ${(await listPresets()).join(', ')}`);
  const found = await presetExport(file);
  if (!found) throw new Error(`${relative(ROOT, file)} exports no list of plugins (a default export, or exactly one named export)`);
  const plugins = found.plugins as readonly Plugin[];
  const summaries = plugins.map((p) => ({ kind: pluginLabel(p), key: p.key, description: p.description ?? '' }));
  return { name, file, exportName: found.name, plugins, summaries };
}
