import type { Plugin } from 'switchyard/sdk';
import { fullPreset } from '../../plugins/presets/full.ts';

const identity = (p: Plugin): string => `${p.kind}:${p.kind === 'variant' ? p.slot : ''}:${p.key}`;

/**
 * The full preset with `plugins` added. One that is a first-party plugin imported from its `plugin.ts` takes the
 * place of the full preset's lazily registered copy of it (docs/adr/0094: the same key, another object), where
 * `new Set([...fullPreset, plugin])` would register the key twice; the others follow the preset, in their order.
 */
export function fullPresetWith(...plugins: readonly unknown[]): Plugin[] {
  const lazy = new Set<unknown>(fullPreset);
  const added = new Map<string, Plugin>();
  // The full preset's own objects among `plugins` (another `fullPresetWith` list spread in) add nothing.
  for (const p of plugins as Plugin[]) if (!lazy.has(p) && !added.has(identity(p))) added.set(identity(p), p);
  const out = fullPreset.map((p) => added.get(identity(p)) ?? p);
  const inPreset = new Set(out);
  for (const p of added.values()) if (!inPreset.has(p)) out.push(p);
  return out;
}
