import { ErrorCode, GatewayError } from 'switchyard/sdk';
import type { Exchange, UpstreamAttempt } from 'switchyard/sdk';

/**
 * What a `backendAuth` variant (`passthrough`, `key`, `gcp`, `aws`, `azure`, or a third party's) compiles to.
 * The `backendAuth` policy compiles the chosen variant once per config load and calls `apply` before every
 * upstream attempt, retries included, after the other policies changed the request.
 */
export interface BackendAuthInstance {
  /**
   * Add the credential to this attempt: set `attempt.headers` (never `ex.headers`, which later attempts copy).
   * Throw (or reject) when no credential can be obtained; the policy answers 500
   * `backend authentication failed: <message>`, so the message must not contain a secret.
   * Stay synchronous when the credential is at hand (a cached token): the runner awaits only promises.
   */
  apply(ex: Exchange, attempt: UpstreamAttempt): void | Promise<void>;
  /**
   * True when `apply` reads `attempt.body` (SigV4 hashes it): the policy then reads the request body into memory
   * before the upstream call (bounded; 413 beyond the limit). Leave unset so bodies keep streaming.
   */
  readonly needsBody?: boolean;
  /** Release timers or clients when the config generation that compiled this instance is retired. */
  dispose?(): void;
}

/** Largest request body read into memory for a variant that signs it (SigV4); larger bodies get 413. */
const SIGNED_BODY_LIMIT = 2 * 1024 * 1024;

/**
 * Read the request body before a signing variant (`needsBody`) hashes it, so the kernel sends the buffer (which
 * also lets retries replay it). Undefined when there is no body or it was read already.
 */
export function bufferBodyForSigning(ex: Exchange): Promise<Buffer> | undefined {
  if (ex.body) return undefined;
  const h = ex.headers;
  const hasBody = (h['content-length'] !== undefined && h['content-length'] !== '0') || h['transfer-encoding'] !== undefined;
  return hasBody ? ex.bufferBody(SIGNED_BODY_LIMIT) : undefined;
}

/** Longest failure reason put in a response (library errors can be long; they never carry the secret itself). */
const MAX_REASON = 300;

/** The 500 reply for a credential that could not be obtained (BEHAVIOUR.md §2.7). */
export function backendAuthFailure(err: unknown): GatewayError {
  if (err instanceof GatewayError) return err;
  let reason = (err instanceof Error ? err.message : String(err)).replace(/\s+/g, ' ').trim() || 'unknown error';
  if (reason.length > MAX_REASON) reason = `${reason.slice(0, MAX_REASON - 1)}\u2026`;
  return new GatewayError(500, 'backend_auth_failed', `backend authentication failed: ${reason}`, ErrorCode.internal);
}

/** The host name (no port, no brackets) of an origin such as `https://h:443`, lower-cased. */
export function originHostname(origin: string): string {
  const hostname = new URL(origin).hostname.toLowerCase();
  return hostname.startsWith('[') ? hostname.slice(1, -1) : hostname;
}
