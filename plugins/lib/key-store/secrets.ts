import { hash, randomBytes } from 'node:crypto';

/** Prefix of generated secrets: recognisable by secret scanners and in a list. */
export const SECRET_PREFIX = 'sk-swy-';

/**
 * SHA-256 hex of a secret. Generated secrets carry 192 random bits, so a fast hash is enough: there is nothing to
 * brute-force, and a slow one would cost every request (ADR 0035). Declared keys should be as random. The one-shot
 * `hash` makes no Hash object: about 1 µs instead of 2.5-3 per request (docs/perf.md "Virtual keys, session 6").
 */
export function digestOf(secret: string): string {
  return hash('sha256', secret, 'hex');
}

export function newSecret(): string {
  return SECRET_PREFIX + randomBytes(24).toString('base64url');
}

export function newKeyId(): string {
  return `vk_${randomBytes(9).toString('base64url')}`;
}

/** What a list shows of a secret: enough to recognise it, never enough to use it. */
export function displayPrefix(secret: string): string {
  return `${secret.slice(0, Math.min(secret.length >> 1, secret.startsWith(SECRET_PREFIX) ? SECRET_PREFIX.length + 4 : 4))}\u2026`;
}
