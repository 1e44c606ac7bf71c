import type { PhaseName } from './phases.ts';
import type { ConfigSection } from './config-section.ts';
import type { BackendCompileContext, CompileContext } from './compile-context.ts';
import type { PolicyInstance } from './policy-instance.ts';
import type { BackendInstance } from './backend-instance.ts';

/** Version of the plugin contract. A plugin built for another major version is refused at load. */
export const SDK_API_VERSION = 1;

/** The brand every plugin object carries; a global symbol, so copies of the SDK in other packages agree. */
export const PLUGIN_BRAND: unique symbol = Symbol.for('switchyard.plugin') as never;

/** A JSON Schema (draft 2020-12) object. Every property should carry a `description`. */
export type JsonSchema = Record<string, unknown>;

/**
 * The kinds of plugin, only what the kernel must tell apart: a `policy` fills map slots (policies objects), a
 * `backend` the kernel's `backend` slot, a `variant` the one-of slot some plugin declared (an MCP transport, an LLM
 * provider, a guard type), and a `slot` declares a place in the config tree that other plugins fill.
 */
export type PluginKind = 'policy' | 'backend' | 'variant' | 'slot';

interface ManifestBase<C> {
  /** The exact config key (SPEC.md). */
  readonly key: string;
  /** Other accepted spellings, such as the neutral vendor words of NAMES.md. */
  readonly aliases?: readonly string[];
  /** One line for `switchyard plugins` and the schema. */
  readonly description: string;
  /** JSON Schema of the value at `key`. May `$ref` `switchyard:defs#/$defs/...` and `switchyard:slot/<name>`. */
  readonly schema: JsonSchema;
  /**
   * Slots this plugin owns and declares (`defineSlot`): the `ai` backend declares `llmProvider`, the `mcp` backend
   * its `mcpTransport` and `mcpTargetPolicies`. The same slot object may be listed by several plugins (the
   * `backendAuth` policy and the `ai` backend both use `backendAuth`); it is registered once.
   */
  readonly slots?: readonly SlotPlugin<any>[];
  /**
   * CEL variables this plugin publishes as request attributes (`jwt`, `apiKey`, the `ai` backend's `llm`), declared
   * to every expression. A name alone gets a generic description in docs; give `{ name, description }` to say what
   * the variable holds.
   */
  readonly celVariables?: readonly CelVariable[];
  /** Sections of the top-level `config:` block this plugin owns (`defineConfigSection`); read with `ctx.configSection`. */
  readonly configSections?: readonly ConfigSection<any>[];
  /** Phantom: the config type after validation. */
  readonly __config?: C;
}

/** A CEL variable a plugin publishes: its name, or its name and what it holds (docs/cel.md). */
export type CelVariable = string | { readonly name: string; readonly description: string };

/** Manifest of a policy plugin. */
export interface PolicyManifest<C = unknown> extends ManifestBase<C> {
  /** Map slots the policy may appear in: `routePolicies`, `backendPolicies`, `mcpTargetPolicies`, ... */
  readonly attach: readonly string[];
  readonly phase: PhaseName;
  /** Place inside the phase; lower runs first on requests (and last on responses). */
  readonly order?: number;
  /**
   * `buffer` or `replay`: the kernel reads the whole request body (2 MiB cap, 413 beyond) before the first
   * request hook of the policies object this policy sits in, so hooks and every upstream attempt (retries
   * included) see `ex.body`.
   */
  readonly needs?: { readonly body?: 'none' | 'buffer' | 'replay' };
  /**
   * `false` promises that the policy never reads `ex.req` as a stream (`on('data')`, `pipe`, async iteration,
   * `resume`): it reads the body, if at all, through `ex.bufferBody`/`bufferBodyInto`, and of `ex.req` only its
   * headers, socket, method, url and httpVersion. Routes whose policies all promise it may be served by the lean
   * HTTP/1.1 server side (ADR 0088), where `ex.req` is a request already read whole, not node:http's
   * `IncomingMessage`. Left out (the default), the policy's routes keep node:http's `IncomingMessage`.
   */
  readonly requestStream?: boolean;
  compile(config: C, ctx: CompileContext): PolicyInstance | Promise<PolicyInstance>;
}

/** Manifest of a backend kind (`host`, `backend`, `mcp`, `ai`, ...). */
export interface BackendManifest<C = unknown> extends ManifestBase<C> {
  /** Whether a top-level named backend may be of this kind. */
  readonly named?: boolean;
  compile(config: C, ctx: BackendCompileContext): BackendInstance | Promise<BackendInstance>;
}

/** Manifest of a variant: a plugin that fills a one-of slot (an MCP transport, an LLM provider, a guard type). */
export interface VariantManifest<C = unknown, I = unknown> extends ManifestBase<C> {
  /** Compile the value at `key` into the instance the slot's owner uses; its type is the slot's contract. */
  compile(config: C, ctx: CompileContext): I | Promise<I>;
}

/**
 * A slot: a place in the config tree where plugins plug in. The kernel declares `routePolicies`,
 * `backendPolicies` and `backend`; every other slot is declared by the plugin that owns it (`defineSlot`).
 * `I` is the contract of a one-of slot's instances (what its variants' `compile` returns).
 */
export interface SlotManifest<I = unknown> {
  /** Slot name, referenced from schemas as `switchyard:slot/<name>` or with `"x-slot": "<name>"`. */
  readonly name: string;
  /** `map`: any number of plugin keys (a policies object); `oneOf`: exactly one key (a transport). */
  readonly type: 'map' | 'oneOf';
  /** Which plugins fill it: `policy` (a map slot: policies whose `attach` names it), `variant` (a one-of slot), `backend`. */
  readonly accepts: 'policy' | 'backend' | 'variant';
  readonly description: string;
  /** How config errors name one entry: `guard type` gives "unknown guard type `x`". Default: "`<name>` entry". */
  readonly noun?: string;
  /** Phantom: the instance contract of the slot's variants. */
  readonly __instance?: I;
}

/** Fields every registered plugin object carries. */
export interface PluginBrand {
  readonly [PLUGIN_BRAND]: true;
  readonly apiVersion: number;
  readonly kind: PluginKind;
}

export type PolicyPlugin<C = unknown> = PolicyManifest<C> & PluginBrand & { readonly kind: 'policy' };
export type BackendPlugin<C = unknown> = BackendManifest<C> & PluginBrand & { readonly kind: 'backend' };
export type VariantPlugin<C = unknown, I = unknown> = VariantManifest<C, I> &
  PluginBrand & {
    readonly kind: 'variant';
    /** The name of the one-of slot this variant fills. */
    readonly slot: string;
  };
export type SlotPlugin<I = unknown> = SlotManifest<I> & PluginBrand & { readonly kind: 'slot'; readonly key: string };

/** Any plugin object. */
export type Plugin = PolicyPlugin<any> | BackendPlugin<any> | VariantPlugin<any, any> | SlotPlugin<any>;

/** What a plugin is called in listings and messages: its kind, or for a variant the slot it fills (`guard`). */
export function pluginLabel(plugin: Plugin): string {
  return plugin.kind === 'variant' ? plugin.slot : plugin.kind;
}

function brand<K extends PluginKind, T extends object>(kind: K, manifest: T): T & PluginBrand & { kind: K } {
  return Object.freeze({ ...manifest, kind, apiVersion: SDK_API_VERSION, [PLUGIN_BRAND]: true as const });
}

/** Define a policy plugin. */
export function definePolicy<C>(manifest: PolicyManifest<C>): PolicyPlugin<C> {
  return brand('policy', manifest);
}

/** Define a backend kind. */
export function defineBackend<C>(manifest: BackendManifest<C>): BackendPlugin<C> {
  return brand('backend', manifest);
}

/**
 * Define a variant of a one-of slot: `defineVariant(guardSlot, { key: 'denylist', ... })`. `compile` must return the
 * slot's instance contract (`GuardInstance` for `guardSlot` of `switchyard/slots/ai`), checked by the compiler.
 * The slot modules also export one-argument helpers (`defineGuard`, `defineLlmProvider`, `defineMcpTransport`,
 * `defineBackendAuth`) that read better when the config type is written out.
 */
export function defineVariant<C, I>(slot: SlotPlugin<I>, manifest: VariantManifest<C, NoInfer<I>>): VariantPlugin<C, I> {
  if (slot.type !== 'oneOf') throw new Error(`defineVariant: slot \`${slot.name}\` is a ${slot.type} slot; variants fill one-of slots`);
  const slots = manifest.slots?.includes(slot) ? manifest.slots : [slot, ...(manifest.slots ?? [])];
  return brand('variant', { ...manifest, slots, slot: slot.name });
}

/** Define a slot that other plugins fill. List it in the owning plugin's `slots` (and export it for third parties). */
export function defineSlot<I = unknown>(manifest: SlotManifest<I>): SlotPlugin<I> {
  return brand('slot', { ...manifest, key: manifest.name });
}

/** True when `value` is a plugin object made by a `define*` helper of any SDK copy. */
export function isPlugin(value: unknown): value is Plugin {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[PLUGIN_BRAND] === true;
}
