import { ErrorCode, SDK_API_VERSION, isPlugin, pluginLabel } from '../sdk/index.ts';
import type { Plugin, SlotManifest, SlotPlugin } from '../sdk/index.ts';
import { ROOT_SLOTS } from './root-slots.ts';
import { manifestProblem } from './manifest-checks.ts';
import { CelVariableOwners } from './cel-variable-owners.ts';

/** Where a plugin came from, for messages: `switchyard` or a third-party package name@version. */
export interface PluginSource {
  readonly name: string;
  readonly module?: string;
}

export interface RegisteredPlugin {
  readonly plugin: Plugin;
  readonly source: PluginSource;
}

interface SlotEntry {
  readonly manifest: SlotManifest;
  readonly source: PluginSource;
  /** Every accepted spelling (key and aliases) to the plugin. */
  readonly members: Map<string, RegisteredPlugin>;
}

/** A failure while registering plugins: duplicate key, wrong API version, not a plugin. */
export class PluginRegistryError extends Error {
  readonly code: string;
  /** The `config.plugins` entry that failed to load, when one did: the CLI shows the error at its place. */
  readonly module: string | undefined;
  constructor(code: string, message: string, module?: string) {
    super(message);
    this.name = 'PluginRegistryError';
    this.code = code;
    this.module = module;
  }
}

const KINDS: ReadonlySet<string> = new Set(['policy', 'backend', 'variant', 'slot']);

/** How messages name where a plugin came from: `name@version (module spec)`. */
export function describeSource(source: PluginSource): string {
  return source.module ? `${source.name} (${source.module})` : source.name;
}

/**
 * The installed plugins, indexed by slot. Built once at boot from a preset plus `config.plugins`;
 * read-only afterwards.
 */
export class PluginRegistry {
  /** Keys taken, per kind (`policy`, `backend`) or, for variants, per slot they fill. */
  private readonly byKind = new Map<string, Map<string, RegisteredPlugin>>();
  private readonly slots = new Map<string, SlotEntry>();
  private readonly all: RegisteredPlugin[] = [];
  private finalized = false;
  private readonly celVariables = new CelVariableOwners<PluginSource>();

  constructor() {
    for (const slot of ROOT_SLOTS) this.slots.set(slot.name, { manifest: slot, source: { name: 'switchyard' }, members: new Map() });
  }

  /** Register one plugin object. Throws on duplicates, version mismatch or a malformed object. */
  register(candidate: unknown, source: PluginSource): void {
    if (this.finalized) throw new Error('registry is finalized');
    if (!isPlugin(candidate)) {
      throw new PluginRegistryError(
        ErrorCode.pluginInvalid,
        `${describeSource(source)} does not export a Switchyard plugin (its default export must come from a define* helper of switchyard/sdk)`,
      );
    }
    const plugin = candidate;
    if (plugin.apiVersion !== SDK_API_VERSION) {
      throw new PluginRegistryError(
        ErrorCode.pluginVersion,
        `plugin \`${plugin.key}\` from ${describeSource(source)} targets plugin API v${plugin.apiVersion}, but this Switchyard provides v${SDK_API_VERSION}`,
      );
    }
    if (typeof plugin.key !== 'string' || !/^[A-Za-z][A-Za-z0-9]*$/.test(plugin.key)) {
      throw new PluginRegistryError(ErrorCode.pluginInvalid, `plugin from ${describeSource(source)} has an invalid key ${JSON.stringify(plugin.key)}`);
    }
    if (!KINDS.has(plugin.kind)) {
      // An older SDK's `defineGuard` (and the like) made kinds such as `guard`; variants now come from `defineVariant`.
      throw new PluginRegistryError(
        ErrorCode.pluginInvalid,
        `plugin \`${plugin.key}\` from ${describeSource(source)} is of kind \`${String(plugin.kind)}\`; this Switchyard knows policy, backend, variant and slot (a guard, provider, transport or backendAuth variant is made with defineVariant or the helpers of switchyard/slots/*)`,
      );
    }
    const problem = manifestProblem(plugin) ?? this.celVariables.claim(plugin, source, describeSource);
    if (problem !== undefined) throw new PluginRegistryError(ErrorCode.pluginInvalid, `plugin \`${plugin.key}\` from ${describeSource(source)} ${problem}`);
    const entry: RegisteredPlugin = { plugin, source };
    if (plugin.kind === 'slot') {
      if (this.declareSlot(plugin, source)) this.all.push(entry);
      return;
    }
    // Slots the plugin owns (or fills, for a variant) come first, so `switchyard plugins` lists a slot before its members.
    for (const slot of plugin.slots ?? []) {
      if (!isPlugin(slot) || slot.kind !== 'slot') {
        throw new PluginRegistryError(ErrorCode.pluginInvalid, `plugin \`${plugin.key}\` from ${describeSource(source)} lists in \`slots\` something defineSlot did not make`);
      }
      if (this.declareSlot(slot, source)) this.all.push({ plugin: slot, source });
    }
    const label = pluginLabel(plugin);
    let kindMap = this.byKind.get(label);
    if (!kindMap) this.byKind.set(label, (kindMap = new Map()));
    for (const name of [plugin.key, ...(plugin.aliases ?? [])]) {
      const clash = kindMap.get(name);
      if (clash) {
        throw new PluginRegistryError(
          ErrorCode.pluginDuplicate,
          `duplicate ${label} key \`${name}\`: registered by ${describeSource(clash.source)} and by ${describeSource(source)}`,
        );
      }
      kindMap.set(name, entry);
    }
    this.all.push(entry);
  }

  /**
   * Declare a slot; false when the same slot is declared already (several plugins may list one slot object, and a
   * third-party package's copy of it is the same slot when name, type and accepted kind agree).
   */
  private declareSlot(slot: SlotPlugin, source: PluginSource): boolean {
    const existing = this.slots.get(slot.name);
    if (!existing) {
      this.slots.set(slot.name, { manifest: slot, source, members: new Map() });
      return true;
    }
    if (existing.manifest.type !== slot.type || existing.manifest.accepts !== slot.accepts) {
      throw new PluginRegistryError(
        ErrorCode.pluginDuplicate,
        `slot \`${slot.name}\` is declared twice, differently: by ${describeSource(existing.source)} and by ${describeSource(source)}`,
      );
    }
    return false;
  }

  /** Place every plugin into its slots. Call once after the last `register`. */
  finalize(): this {
    if (this.finalized) return this;
    for (const entry of this.all) {
      const p = entry.plugin;
      if (p.kind === 'policy') {
        for (const slotName of p.attach) {
          const slot = this.slots.get(slotName);
          // A slot nobody declared belongs to a plugin this distribution left out (`mcpTargetPolicies` without `mcp`).
          if (!slot) continue;
          if (slot.manifest.type !== 'map' || slot.manifest.accepts !== 'policy') {
            throw new PluginRegistryError(
              ErrorCode.pluginInvalid,
              `policy \`${p.key}\` from ${describeSource(entry.source)} attaches to \`${slotName}\`, which is not a declared map slot`,
            );
          }
          this.addMember(slot, entry);
        }
      } else if (p.kind === 'backend') {
        this.addMember(this.slots.get('backend')!, entry);
      } else if (p.kind === 'variant') {
        const slot = this.slots.get(p.slot);
        if (!slot || slot.manifest.type !== 'oneOf' || slot.manifest.accepts !== 'variant') {
          throw new PluginRegistryError(
            ErrorCode.pluginInvalid,
            `variant \`${p.key}\` from ${describeSource(entry.source)} fills \`${p.slot}\`, which is not a declared one-of slot`,
          );
        }
        this.addMember(slot, entry);
      }
    }
    this.finalized = true;
    return this;
  }

  private addMember(slot: SlotEntry, entry: RegisteredPlugin): void {
    const p = entry.plugin;
    if (p.kind === 'slot') return;
    for (const name of [p.key, ...(p.aliases ?? [])]) slot.members.set(name, entry);
  }

  /** The plugin for `key` (or an alias) in `slot`. */
  lookup(slot: string, key: string): RegisteredPlugin | undefined {
    return this.slots.get(slot)?.members.get(key);
  }

  slot(name: string): SlotManifest | undefined {
    return this.slots.get(name)?.manifest;
  }

  /** How config messages name one entry of each slot that says (`guard` -> `guard type`). */
  slotNouns(): Record<string, string> {
    const out: Record<string, string> = {};
    for (const [name, slot] of this.slots) if (slot.manifest.noun) out[name] = slot.manifest.noun;
    return out;
  }

  slotNames(): string[] {
    return [...this.slots.keys()];
  }

  /** Distinct plugins of a slot, each once (not once per alias). */
  slotMembers(name: string): RegisteredPlugin[] {
    const slot = this.slots.get(name);
    return slot ? [...new Set(slot.members.values())] : [];
  }

  /** Every accepted key of a slot (keys and aliases). */
  slotKeys(name: string): string[] {
    return [...(this.slots.get(name)?.members.keys() ?? [])];
  }

  plugins(): readonly RegisteredPlugin[] {
    return this.all;
  }
}
