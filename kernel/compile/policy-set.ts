import { Phase } from '../sdk/index.ts';
import type { PolicyFacets, PolicyInstance, PolicyPlugin, PolicySet } from '../sdk/index.ts';

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

/** A compiled `policies` object: entries in pipeline order and the hook arrays the runner walks. */
export class CompiledPolicySet implements PolicySet {
  readonly entries: readonly PolicyEntry[];
  readonly keys: readonly string[];
  readonly facets: PolicyFacets;

  constructor(entries: PolicyEntry[]) {
    this.entries = [...entries].sort((a, b) => rank(a) - rank(b));
    this.keys = this.entries.map((e) => e.key);
    let facets: PolicyFacets = {};
    for (const e of this.entries) if (e.instance.facets) facets = mergeFacets(facets, e.instance.facets);
    this.facets = facets;
  }

  has(key: string): boolean {
    return this.keys.includes(key);
  }

  /**
   * Instances with an onRequest hook, in order; null when none (the runner skips null phases). When a policy's
   * manifest says it needs the body (`needs.body`), the body is read (bounded) before the first hook runs.
   */
  requestHooks(): PolicyInstance[] | null {
    const list = this.entries.filter((e) => e.instance.onRequest).map((e) => e.instance);
    if (this.entries.some((e) => e.plugin.needs?.body === 'buffer' || e.plugin.needs?.body === 'replay')) list.unshift(READ_BODY_FIRST);
    return list.length ? list : null;
  }

  /** Instances with an onResponse hook, in reverse order. */
  responseHooks(): PolicyInstance[] {
    return this.entries
      .filter((e) => e.instance.onResponse)
      .map((e) => e.instance)
      .reverse();
  }

  logHooks(): PolicyInstance[] {
    return this.entries.filter((e) => e.instance.onLog).map((e) => e.instance);
  }

  static readonly EMPTY = new CompiledPolicySet([]);
}

/** The policy set a backend sees: the route's and the backend's, the backend's winning per key. */
export class LayeredPolicySet implements PolicySet {
  readonly keys: readonly string[];
  readonly facets: PolicyFacets;
  readonly route: CompiledPolicySet;
  readonly backend: CompiledPolicySet;

  constructor(route: CompiledPolicySet, backend: CompiledPolicySet) {
    this.route = route;
    this.backend = backend;
    this.keys = [...new Set([...route.keys, ...backend.keys])];
    this.facets = mergeFacets(route.facets, backend.facets);
  }

  has(key: string): boolean {
    return this.keys.includes(key);
  }

  /** onUpstream hooks: one per policy key, the backend's instance replacing the route's. */
  upstreamHooks(): PolicyInstance[] | null {
    const byKey = new Map<string, PolicyEntry>();
    for (const e of this.route.entries) if (e.instance.onUpstream) byKey.set(e.key, e);
    for (const e of this.backend.entries) if (e.instance.onUpstream) byKey.set(e.key, e);
    const list = [...byKey.values()].sort((a, b) => rank(a) - rank(b)).map((e) => e.instance);
    return list.length ? list : null;
  }
}
