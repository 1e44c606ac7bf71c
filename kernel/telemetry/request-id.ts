// Not `import ... from 'node:crypto'`: an ES import builds crypto's namespace, which reads its lazy `webcrypto` getter and
// so loads Node's WebCrypto for every gateway (docs/perf.md "Memory, session 10b").
const { randomBytes } = process.getBuiltinModule('node:crypto');

/**
 * Request ids (ADR 0025): a client's `x-request-id` is kept when it is a plain token, else one is made. Made ids are
 * a random per-process prefix and a counter (`<12 hex>-<base36>`): unique across replicas with overwhelming
 * probability, no randomness or UUID formatting per request.
 */
const PREFIX = `${randomBytes(6).toString('hex')}-`;
let counter = 0;

/** Longest client id kept; ids go into every log line and upstream. */
export const MAX_REQUEST_ID = 128;

/** Letters, digits and `-._:+/=@`: what UUIDs, ULIDs, base64 and trace ids use; no spaces, quotes or controls. */
const TOKEN = /^[A-Za-z0-9\-._:+/=@]{1,128}$/;

export function newRequestId(): string {
  counter = counter === Number.MAX_SAFE_INTEGER ? 0 : counter + 1;
  return PREFIX + counter.toString(36);
}

/** The client's id when it is a plain token of at most 128 characters, else a new one. */
export function requestIdFor(incoming: string | string[] | undefined): string {
  return typeof incoming === 'string' && TOKEN.test(incoming) ? incoming : newRequestId();
}
