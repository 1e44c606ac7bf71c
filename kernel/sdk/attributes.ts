/**
 * A typed per-request attribute: policies that authenticate a caller publish what they learned (JWT claims,
 * the API key's metadata) under a key; later policies and CEL read it back with the same key.
 */
export interface AttributeKey<T> {
  readonly name: string;
  /** Phantom field that carries the value type; never set. */
  readonly __type?: T;
}

/** Create a typed attribute key. The name is also the CEL variable name when the value is exposed to CEL. */
export function defineAttribute<T>(name: string): AttributeKey<T> {
  return Object.freeze({ name });
}
