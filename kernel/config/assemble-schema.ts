import { ErrorCode, pluginLabel } from '../sdk/index.ts';
import type { ConfigSection, JsonSchema } from '../sdk/index.ts';
import { PluginRegistryError, describeSource } from '../registry/registry.ts';
import type { PluginRegistry } from '../registry/registry.ts';
import { ROOT_SCHEMA, SHARED_DEFS, SKELETON_DEFS } from './skeleton-schema.ts';

const SHARED_REF = 'switchyard:defs#/$defs/';
const SLOT_REF = 'switchyard:slot/';

/** Name of the `$defs` entry holding a plugin's schema. */
export function pluginDefName(kind: string, key: string): string {
  return `${kind}.${key}`;
}

/** Where a plugin's `config:` section sits (`session`, `defaultTimeouts.llmBackendRequestTimeout`): its identity. */
export function configSectionPath(section: ConfigSection<unknown>): string {
  return section.parent === undefined ? section.name : `${section.parent}.${section.name}`;
}

/**
 * Build the one JSON Schema document (draft 2020-12) for the installed plugins: the kernel skeleton, the
 * shared definitions, a definition per plugin, and each slot expanded to exactly the installed keys.
 */
export function assembleSchema(registry: PluginRegistry): JsonSchema {
  const defs: Record<string, JsonSchema> = { ...SHARED_DEFS };
  const contributed: Record<string, unknown> = {};
  /** The plugin whose schema is being transformed, for messages (`plugin \`x\` from pkg@1.0.0 (spec)`). */
  let owner: string | undefined;

  const slotMembers = (slot: string, filter: unknown): Record<string, JsonSchema> => {
    const members: Record<string, JsonSchema> = {};
    for (const { plugin } of registry.slotMembers(slot)) {
      if (plugin.kind === 'slot') continue;
      if (filter === 'named' && !(plugin.kind === 'backend' && plugin.named)) continue;
      const ref = `#/$defs/${pluginDefName(pluginLabel(plugin), plugin.key)}`;
      members[plugin.key] = { $ref: ref, description: plugin.description };
      for (const alias of plugin.aliases ?? []) {
        members[alias] = { $ref: ref, description: `Same as \`${plugin.key}\` (neutral name). ${plugin.description}` };
      }
    }
    return members;
  };

  const transform = (node: unknown, localPrefix: string | undefined): unknown => {
    if (Array.isArray(node)) return node.map((n) => transform(n, localPrefix));
    if (typeof node !== 'object' || node === null) return node;
    const src = node as Record<string, unknown>;
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(src)) {
      if (k === '$defs' && localPrefix !== undefined) continue;
      if (k === '$ref' && typeof v === 'string') out[k] = rewriteRef(v, localPrefix);
      else if (k === 'x-slot') continue;
      else out[k] = transform(v, localPrefix);
    }
    const slotName = src['x-slot'];
    if (typeof slotName === 'string') {
      const slot = registry.slot(slotName);
      if (!slot) throw new PluginRegistryError(ErrorCode.pluginInvalid, `${owner ?? 'the schema'} refers to slot \`${slotName}\`, which no installed plugin declares`);
      const members = slotMembers(slotName, src['x-slot-filter']);
      out.type = 'object';
      out.properties = { ...((out.properties as object | undefined) ?? {}), ...members };
      out.additionalProperties = false;
      out['x-switchyard-slot'] = slotName;
      if (slot.type === 'oneOf') out.exactlyOneOf = Object.keys(members);
    }
    return out;
  };

  const rewriteRef = (ref: string, localPrefix: string | undefined): string => {
    if (ref.startsWith(SHARED_REF)) return `#/$defs/${ref.slice(SHARED_REF.length)}`;
    if (ref.startsWith(SLOT_REF)) return `#/$defs/slot.${ref.slice(SLOT_REF.length)}`;
    if (localPrefix !== undefined && ref.startsWith('#/$defs/')) return `#/$defs/${localPrefix}${ref.slice('#/$defs/'.length)}`;
    return ref;
  };

  for (const [name, def] of Object.entries(SKELETON_DEFS)) defs[name] = transform(def, undefined) as JsonSchema;
  // Sections of `config:` that plugins own (the `mcp` backend's `session`) join the kernel's static settings.
  const staticProps = (defs.staticConfig as { properties: Record<string, unknown> }).properties;
  // A section with a `parent` is one more property of that kernel object (`defaultTimeouts`).
  for (const { plugin, source } of registry.plugins()) {
    if (plugin.kind === 'slot') continue;
    for (const section of plugin.configSections ?? []) {
      const where = configSectionPath(section);
      const parent = section.parent === undefined ? undefined : (staticProps[section.parent] as { type?: string; properties?: Record<string, unknown> } | undefined);
      if (section.parent !== undefined && (parent?.type !== 'object' || parent.properties === undefined)) {
        throw new PluginRegistryError(ErrorCode.pluginInvalid, `plugin \`${plugin.key}\` from ${source.name} contributes \`config.${where}\`, but \`config.${section.parent}\` is not an object of settings`);
      }
      const props = parent?.properties ?? staticProps;
      if (Object.hasOwn(props, section.name) && props[section.name] !== undefined) {
        if (where in contributed && contributed[where] === section) continue;
        throw new PluginRegistryError(
          ErrorCode.pluginDuplicate,
          `plugin \`${plugin.key}\` from ${source.name} contributes \`config.${where}\`, which the gateway or another plugin already defines`,
        );
      }
      contributed[where] = section;
      owner = `plugin \`${plugin.key}\` from ${describeSource(source)}`;
      props[section.name] = transform(section.schema, undefined);
    }
  }
  owner = undefined;
  for (const name of registry.slotNames()) {
    defs[`slot.${name}`] = transform({ 'x-slot': name, description: registry.slot(name)!.description }, undefined) as JsonSchema;
  }
  for (const { plugin, source } of registry.plugins()) {
    if (plugin.kind === 'slot') continue;
    owner = `plugin \`${plugin.key}\` from ${describeSource(source)}`;
    const defName = pluginDefName(pluginLabel(plugin), plugin.key);
    const prefix = `${defName}.`;
    const schema = transform(plugin.schema, prefix) as JsonSchema;
    if (!schema.description) schema.description = plugin.description;
    defs[defName] = schema;
    const ownDefs = (plugin.schema.$defs ?? {}) as Record<string, unknown>;
    for (const [name, def] of Object.entries(ownDefs)) defs[`${prefix}${name}`] = transform(def, prefix) as JsonSchema;
  }

  return {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    $id: 'https://switchyard.dev/schema/config.json',
    title: 'Switchyard configuration',
    ...ROOT_SCHEMA,
    $defs: defs,
  };
}
