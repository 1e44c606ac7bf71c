import { createHash, timingSafeEqual } from 'node:crypto';
import { defineAttribute, jsonErrorReply } from 'switchyard/sdk';
import type { AttributeKey, CompileContext, PolicyInstance, Reply } from 'switchyard/sdk';
import { bearerToken } from '../../lib/credentials/credentials.ts';

export interface ApiKeyConfig {
  keys: { key: string; metadata?: Record<string, unknown> }[];
  mode?: 'strict' | 'optional' | 'permissive';
}

/** What CEL sees as `apiKey`: `key` plus every metadata field. */
export type ApiKeyAttribute = Readonly<Record<string, unknown>> & { readonly key: string };

/** The `apiKey` attribute key (CEL `apiKey.key`, `apiKey.<field>`). */
export const apiKeyAttribute: AttributeKey<ApiKeyAttribute> = defineAttribute<ApiKeyAttribute>('apiKey');

interface KeyEntry {
  readonly digest: Buffer;
  readonly attribute: ApiKeyAttribute;
}

/**
 * Where apiKey looks for a key (DECIDED 7), plus `x-goog-api-key`, where Gemini SDK clients send theirs: read so a
 * Gemini client can authenticate, and declared so it is removed before any upstream (docs/security.md).
 */
const API_KEY_HEADERS: readonly string[] = Object.freeze(['x-api-key', 'x-goog-api-key', 'authorization']);

/** The first non-empty one of the key headers, in preference order; else the bearer token. */
function presentedKey(headers: Readonly<Record<string, string | string[] | undefined>>): string | undefined {
  for (const name of ['x-api-key', 'x-goog-api-key']) {
    const value = headers[name];
    if (typeof value === 'string' && value.length > 0) return value.trim();
  }
  return bearerToken(headers.authorization as string | undefined);
}

const sha256 = (value: string): Buffer => createHash('sha256').update(value, 'utf8').digest();

/**
 * Find the entry whose key has the digest of `presented`. Digests have a fixed length, so neither the key's length
 * nor how much of it matched shows in the time taken; every entry is compared, so neither does its position.
 */
function match(entries: readonly KeyEntry[], presented: string): KeyEntry | undefined {
  const digest = sha256(presented);
  let found: KeyEntry | undefined;
  for (const entry of entries) {
    if (timingSafeEqual(entry.digest, digest) && found === undefined) found = entry;
  }
  return found;
}

function reject(message: string): Reply {
  return jsonErrorReply(401, 'authentication_failed', `api key authentication failure: ${message}`);
}

export function compileApiKey(config: ApiKeyConfig, ctx: CompileContext): PolicyInstance {
  const byDigest = new Map<string, number>();
  const entries: KeyEntry[] = config.keys.map(({ key, metadata }, i) => {
    const digest = sha256(key);
    const hex = digest.toString('hex');
    const first = byDigest.get(hex);
    // The message names positions, never the key.
    if (first !== undefined) ctx.fail(`this key is the same as \`keys[${first}]\`; each key must be unique`, ['keys', i, 'key']);
    byDigest.set(hex, i);
    // Built once: requests share the frozen attribute object.
    return { digest, attribute: Object.freeze({ ...(metadata ?? {}), key }) };
  });
  const mode = config.mode ?? 'optional';

  return {
    // All are removed before the request goes upstream, whichever carried the key (ADR 0015).
    credentialHeaders: API_KEY_HEADERS,
    onRequest(ex) {
      // x-api-key is preferred, then x-goog-api-key, then the bearer token.
      const presented = presentedKey(ex.headers);
      if (presented === undefined) return mode === 'strict' ? reject('no API Key found') : undefined;
      const entry = match(entries, presented);
      if (entry === undefined) return mode === 'permissive' ? undefined : reject('invalid credentials');
      ex.set(apiKeyAttribute, entry.attribute);
      return undefined;
    },
  };
}
