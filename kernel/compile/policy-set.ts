import { Phase } from '../sdk/index.ts';
import type { AttemptHook, DerivedRequest, Exchange, Facet, PolicyFacets, PolicyInstance, PolicyPlugin, PolicySet, UpstreamAttempt } from '../sdk/index.ts';
import { ExchangeView } from '../exchange/exchange-view.ts';
import { ownedHooks, runRequestHooks, runUpstreamHook } from './run-hooks.ts';
import { withholdCredentials } from './withhold-credentials.ts';

export interface PolicyEntry {
  /** The canonical key (aliases resolved). */
  readonly key: string;
  readonly plugin: PolicyPlugin;
  readonly instance: PolicyInstance;
}

/** Merge facets field by field; `over` wins. */
export function mergeFacets(base: PolicyFacets, over: PolicyFacets): PolicyFacets {
  const out: PolicyFacets = { ...base };
  for (const [k, v] of Object.entries(over)) if (v !== undefined) (out as Record<string, unknown>)[k] = v;
  return out;
}

/** Reads the request body (2 MiB cap, 413 beyond) so later hooks and every upstream attempt see `ex.body`. */
const READ_BODY_FIRST: PolicyInstance = {
  onRequest: (ex) => ex.bufferBody().then(() => undefined),
};

function rank(e: PolicyEntry): number {
  return Phase[e.plugin.phase] * 1000 + (e.plugin.order ?? 0);
}

/** Hooks of `entries` that have `pick`, in pipeline order; one per policy key (later layers replaced earlier ones). */
function hooksOf(entries: readonly PolicyEntry[], pick: keyof PolicyInstance): PolicyInstance[] {
  return entries.filter((e) => e.instance[pick]).map((e) => e.instance);
}

/** Entries of several layers, one per policy key (a later layer's instance replacing an earlier one's), in pipeline order. */
function mergeLayers(layers: readonly (readonly PolicyEntry[])[]): PolicyEntry[] {
  const byKey = new Map<string, PolicyEntry>();
  for (const layer of layers) for (const e of layer) byKey.set(e.key, e);
  return [...byKey.values()].sort((a, b) => rank(a) - rank(b));
}

/** Behaviour shared by compiled and layered sets: everything is derived from `merged` (one entry per key). */
abstract class PolicySetBase implements PolicySet {
  abstract readonly keys: readonly string[];
  abstract readonly facets: PolicyFacets;
  /** Typed facet values by facet name (`provides`), the most specific policy's winning. */
  abstract readonly provided: ReadonlyMap<string, unknown>;
  /** One entry per policy key, in pipeline order. */
  protected abstract readonly merged: readonly PolicyEntry[];
  private requestList: PolicyInstance[] | null | undefined;
  private upstreamList: PolicyInstance[] | null | undefined;
  private ownedRequestList: PolicyInstance[] | null | undefined;
  private ownedUpstreamList: PolicyInstance[] | null | undefined;

  has(key: string): boolean {
    return this.keys.includes(key);
  }

  facet<T>(facet: Facet<T>): T | undefined {
    return this.provided.get(facet.name) as T | undefined;
  }

  layer(over: PolicySet): PolicySet {
    return new LayeredPolicySet([this, over as PolicySetBase]);
  }

  /** The entries of this set, for layering. */
  get layerEntries(): readonly PolicyEntry[] {
    return this.merged;
  }

  /**
   * Instances with an onRequest hook, in order; null when none (the runner skips null phases). When a policy's
   * manifest says it needs the body (`needs.body`), the body is read (bounded) before the first hook runs.
   */
  requestHooks(): PolicyInstance[] | null {
    if (this.requestList !== undefined) return this.requestList;
    const list: PolicyInstance[] = [];
    // Credential headers (ADR 0015): removed by one hook right after the last policy that reads any of them.
    const credentials = new Set<string>();
    let withholdAt = -1;
    for (const e of this.merged) {
      if (e.instance.onRequest) list.push(e.instance);
      const names = e.instance.credentialHeaders;
      if (names && names.length > 0) {
        for (const n of names) credentials.add(n.toLowerCase());
        withholdAt = list.length;
      }
    }
    if (withholdAt >= 0) list.splice(withholdAt, 0, withholdCredentials([...credentials]));
    if (this.merged.some((e) => e.plugin.needs?.body === 'buffer' || e.plugin.needs?.body === 'replay')) list.unshift(READ_BODY_FIRST);
    return (this.requestList = list.length ? list : null);
  }

  /** onUpstream hooks: one per policy key, the latest layer's instance winning. */
  upstreamHooks(): PolicyInstance[] | null {
    if (this.upstreamList !== undefined) return this.upstreamList;
    const list = hooksOf(this.merged, 'onUpstream');
    return (this.upstreamList = list.length ? list : null);
  }

  /** Whether every policy of the set promises not to read `ex.req` as a stream (`requestStream: false`). */
  get requestStreamFree(): boolean {
    return this.merged.every((e) => e.plugin.requestStream === false);
  }

  get hasRequestHooks(): boolean {
    return this.requestHooks() !== null;
  }

  async runRequestHooks(ex: Exchange): Promise<DerivedRequest> {
    const view = new ExchangeView(ex, true);
    // Third-party hooks tagged and their replies checked (ADR 0155); the caller's own request deadline bounds them.
    const hooks = (this.ownedRequestList ??= ownedHooks(this.requestHooks(), 'request', 0));
    const reply = hooks ? await runRequestHooks(hooks, view) : undefined;
    return reply ? { exchange: view, reply } : { exchange: view };
  }

  attemptHook(ex: Exchange): AttemptHook | undefined {
    const hooks = (this.ownedUpstreamList ??= ownedHooks(this.upstreamHooks(), 'upstream', 0));
    if (!hooks) return undefined;
    const detached = new ExchangeView(ex, false);
    return async (attempt: UpstreamAttempt) => {
      // Failures name their plugin (ADR 0144); the caller's own request deadline bounds the wait.
      for (const hook of hooks) await runUpstreamHook(hook, detached, attempt);
    };
  }
}

/** A compiled `policies` object: entries in pipeline order and the hook arrays the runner walks. */
export class CompiledPolicySet extends PolicySetBase {
  readonly entries: readonly PolicyEntry[];
  readonly keys: readonly string[];
  readonly facets: PolicyFacets;
  readonly provided: ReadonlyMap<string, unknown>;

  constructor(entries: PolicyEntry[]) {
    super();
    this.entries = [...entries].sort((a, b) => rank(a) - rank(b));
    this.keys = this.entries.map((e) => e.key);
    let facets: PolicyFacets = {};
    const provided = new Map<string, unknown>();
    for (const e of this.entries) {
      if (e.instance.facets) facets = mergeFacets(facets, e.instance.facets);
      for (const p of e.instance.provides ?? []) provided.set(p.facet, p.value);
    }
    this.facets = facets;
    this.provided = provided;
  }

  protected get merged(): readonly PolicyEntry[] {
    return this.entries;
  }

  /** Instances with an onResponse hook, in reverse order. */
  responseHooks(): PolicyInstance[] {
    return hooksOf(this.entries, 'onResponse').reverse();
  }

  logHooks(): PolicyInstance[] {
    return hooksOf(this.entries, 'onLog');
  }

  static readonly EMPTY = new CompiledPolicySet([]);
}

/**
 * Sets stacked over each other (route < backend < MCP target): per policy key the top-most layer's instance is the
 * one that runs, facets merge field by field with the top winning.
 */
export class LayeredPolicySet extends PolicySetBase {
  readonly keys: readonly string[];
  readonly facets: PolicyFacets;
  readonly provided: ReadonlyMap<string, unknown>;
  protected readonly merged: readonly PolicyEntry[];

  constructor(layers: readonly PolicySet[]) {
    super();
    this.merged = mergeLayers(layers.map((l) => (l as PolicySetBase).layerEntries));
    this.keys = [...new Set(layers.flatMap((l) => l.keys))];
    this.facets = layers.reduce<PolicyFacets>((facets, l) => mergeFacets(facets, l.facets), {});
    const provided = new Map<string, unknown>();
    for (const l of layers) for (const [name, value] of (l as PolicySetBase).provided) provided.set(name, value);
    this.provided = provided;
  }
}
