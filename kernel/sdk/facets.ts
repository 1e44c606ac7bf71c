/**
 * A typed facet: a compiled value a policy hands, at compile time, to the backend it applies to (or to any plugin
 * that compiles against its policy set). The policy lists `facet.of(value)` in its instance's `provides`; the
 * backend reads `ctx.policies.facet(facet)` once in its `compile`. Nothing is looked up per request, unlike an
 * attribute set on every exchange.
 */
export interface Facet<T> {
  /** Facets are told apart by name, so copies of the SDK in other packages agree (like attributes). */
  readonly name: string;
  /** The entry for a policy instance's `provides`. */
  of(value: T): FacetValue<T>;
  /** Phantom field that carries the value type; never set. */
  readonly __type?: T;
}

/** One value a policy provides for a facet. */
export interface FacetValue<T = unknown> {
  readonly facet: string;
  readonly value: T;
}

/** Create a typed facet. Name it for the owner and the value (`ai.policy`). */
export function defineFacet<T>(name: string): Facet<T> {
  return Object.freeze({ name, of: (value: T): FacetValue<T> => Object.freeze({ facet: name, value }) });
}
