import { PLUGIN_BRAND } from 'switchyard/sdk';
import type { ConfigSection, Plugin, SlotPlugin } from 'switchyard/sdk';

/** A plugin's manifest as bin/gen-catalog.ts writes it into full-manifests.json: every field but the code. */
export type ManifestData = Readonly<Record<string, unknown>> & { readonly key: string; readonly kind: string };

/** The parts of a manifest that are objects of other modules, not data: slots and `config:` sections. */
export interface ManifestObjects {
  readonly slots?: readonly SlotPlugin<any>[];
  readonly configSections?: readonly ConfigSection<any>[];
}

/**
 * A first-party plugin registered from its generated manifest (docs/adr/0094): the registry, the schema, `switchyard
 * plugins` and the config's messages read only the manifest, so the plugin's module (`plugin.ts` and what it imports)
 * is imported by the first `compile`, i.e. when a config load (a start, a reload) meets the plugin's key, before the
 * load serves. A gateway whose config uses three plugins loads three plugin modules, not ~50 (with their schemas).
 */
export function lazyPlugin(manifest: ManifestData, load: () => Promise<{ default: unknown }>, objects: ManifestObjects = {}): Plugin {
  let implementation: Promise<Plugin> | undefined;
  const loaded = (): Promise<Plugin> => (implementation ??= load().then(({ default: plugin }) => sameManifest(manifest, plugin)));
  return Object.freeze({
    ...manifest,
    ...objects,
    [PLUGIN_BRAND]: true,
    compile(config: unknown, ctx: never) {
      return loaded().then((plugin) => (plugin as { compile(config: unknown, ctx: never): unknown }).compile(config, ctx));
    },
  }) as unknown as Plugin;
}

/** The module must still be the plugin the manifest was generated from (a stale full-manifests.json fails here, loudly). */
function sameManifest(manifest: ManifestData, plugin: unknown): Plugin {
  const p = plugin as Partial<Plugin> | undefined;
  if (p?.key !== manifest.key || p.kind !== manifest.kind || typeof (p as { compile?: unknown }).compile !== 'function') {
    throw new Error(`plugin \`${manifest.key}\`: its module no longer matches plugins/presets/full-manifests.json; run \`npm run catalog\``);
  }
  return p as Plugin;
}
