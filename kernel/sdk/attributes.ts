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

/** Credential headers as the client sent them, by lower-case name. */
export type WithheldCredentials = Readonly<Record<string, string | string[]>>;

/**
 * The credential headers the kernel removed from a request (those named by `PolicyInstance.credentialHeaders`),
 * with the values the client sent; unset when the request carried none. Read it to forward a credential on
 * purpose (`backendAuth.passthrough` puts `authorization` back on the upstream request). Not a CEL variable.
 */
export const withheldCredentials: AttributeKey<WithheldCredentials> = defineAttribute<WithheldCredentials>('switchyard.withheldCredentials');
