import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { principal } from 'switchyard/sdk';
import type { Exchange } from 'switchyard/sdk';

/** What a sealed session id carries, so any replica with the key can rebuild the session (DECIDED 15). */
export interface SessionClaims {
  /** Gateway session identity (random). */
  readonly u: string;
  /** Protocol version negotiated with the client. */
  readonly p: string;
  /** The client's `initialize` params (protocolVersion, capabilities, clientInfo), replayed to fresh upstreams. */
  readonly i: Record<string, unknown>;
  /**
   * Per target: upstream session id (`s`), negotiated version (`v`), capability names (`c`), and the resource URIs
   * the client subscribed to (`r`, the target's own URIs; replayed to a target started fresh elsewhere).
   */
  readonly t: Record<string, { s?: string; v?: string; c?: string[]; r?: string[] }>;
  /** Issued at (seconds). */
  readonly n: number;
  /** Who opened the session (`principalOf`): only that caller may use it (ADR 0120). Absent: opened anonymously. */
  readonly w?: string;
}

/**
 * The caller a session is bound to: a digest of the request's SDK `principal` (set by the authentication policies),
 * or undefined for a request no policy authenticated. A digest: it goes into every sealed session id.
 */
export function principalOf(ex: Exchange): string | undefined {
  const who = ex.get(principal);
  return who === undefined ? undefined : createHash('sha256').update(who).digest('base64url').slice(0, 22);
}

const VERSION = 1;
const IV = 12;
const TAG = 16;

/** A short hash of the backend's config: bound into every token, so a token opens only the backend it was made for. */
export function fingerprint(value: unknown): Buffer {
  return createHash('sha256').update(JSON.stringify(value)).digest().subarray(0, 16);
}

/** Seal claims with AES-256-GCM: base64url of version byte, IV, ciphertext, tag. The fingerprint is the AAD. */
export function sealSession(key: Buffer, aad: Buffer, claims: SessionClaims): string {
  const iv = randomBytes(IV);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(aad);
  const body = Buffer.concat([cipher.update(JSON.stringify(claims), 'utf8'), cipher.final()]);
  return Buffer.concat([Buffer.from([VERSION]), iv, body, cipher.getAuthTag()]).toString('base64url');
}

/** Open a sealed id; undefined when it is malformed, forged, sealed with another key or for another backend. */
export function unsealSession(key: Buffer, aad: Buffer, token: string): SessionClaims | undefined {
  if (token.length < 40 || token.length > 16384 || !/^[A-Za-z0-9_-]+$/.test(token)) return undefined;
  const raw = Buffer.from(token, 'base64url');
  if (raw.length < 1 + IV + TAG + 2 || raw[0] !== VERSION) return undefined;
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(1, 1 + IV));
    decipher.setAAD(aad);
    decipher.setAuthTag(raw.subarray(raw.length - TAG));
    const plain = Buffer.concat([decipher.update(raw.subarray(1 + IV, raw.length - TAG)), decipher.final()]);
    const claims = JSON.parse(plain.toString('utf8')) as SessionClaims;
    if (typeof claims.u !== 'string' || typeof claims.p !== 'string' || typeof claims.t !== 'object' || typeof claims.i !== 'object') return undefined;
    if (claims.w !== undefined && typeof claims.w !== 'string') return undefined;
    return claims;
  } catch {
    return undefined;
  }
}
