import { defineAttribute, jsonErrorReply, principal } from 'switchyard/sdk';
import type { AttributeKey, CompileContext, PolicyInstance, Reply } from 'switchyard/sdk';
import { KEY_HEADERS, presentedKey, takeSubprotocolKey, unpresentableKey } from '../../lib/credentials/credentials.ts';
import { digestOf } from '../../lib/key-store/secrets.ts';

export interface ApiKeyConfig {
  keys: { key: string; metadata?: Record<string, unknown> }[];
  mode?: 'strict' | 'optional' | 'permissive';
}

/** What CEL sees as `apiKey`: `key` plus every metadata field. */
export type ApiKeyAttribute = Readonly<Record<string, unknown>> & { readonly key: string };

/** The `apiKey` attribute key (CEL `apiKey.key`, `apiKey.<field>`). */
export const apiKeyAttribute: AttributeKey<ApiKeyAttribute> = defineAttribute<ApiKeyAttribute>('apiKey');

function reject(message: string): Reply {
  return jsonErrorReply(401, 'authentication_failed', `api key authentication failure: ${message}`);
}

export function compileApiKey(config: ApiKeyConfig, ctx: CompileContext): PolicyInstance {
  /**
   * Each key's CEL attribute (built once: requests share the frozen object) by the SHA-256 hex digest of the key (ADR
   * 0114). Keys are found by their digest, never compared themselves: a lookup's timing can tell only how the digest
   * of what was presented relates to the stored digests, and no key can be worked back from a digest (as
   * `virtualKeys` finds its keys, ADR 0035). One lookup per request, whatever the number of keys: comparing the
   * digest with every key's cost about 0.1 µs per configured key, 100 µs a request with 1,000 keys.
   */
  const byDigest = new Map<string, ApiKeyAttribute>();
  const positions = new Map<string, number>();
  config.keys.forEach(({ key, metadata }, i) => {
    const problem = unpresentableKey(key);
    if (problem !== undefined) ctx.fail(problem, ['keys', i, 'key']);
    const digest = digestOf(key);
    const first = positions.get(digest);
    // The message names positions, never the key.
    if (first !== undefined) ctx.fail(`this key is the same as \`keys[${first}]\`; each key must be unique`, ['keys', i, 'key']);
    positions.set(digest, i);
    byDigest.set(digest, Object.freeze({ ...(metadata ?? {}), key }));
  });
  const mode = config.mode ?? 'optional';

  return {
    // All are removed before the request goes upstream, whichever carried the key (ADR 0015).
    credentialHeaders: KEY_HEADERS,
    onRequest(ex) {
      // x-api-key is preferred, then x-goog-api-key, then the bearer token, then a browser's WebSocket subprotocol
      // (taken out of the header whatever the outcome, ADR 0195).
      const fromSubprotocol = takeSubprotocolKey(ex.headers);
      const presented = presentedKey(ex.headers) ?? fromSubprotocol;
      if (presented === undefined) return mode === 'strict' ? reject('no API Key found') : undefined;
      const digest = digestOf(presented);
      const attribute = byDigest.get(digest);
      if (attribute === undefined) return mode === 'permissive' ? undefined : reject('invalid credentials');
      ex.set(apiKeyAttribute, attribute);
      ex.set(principal, `apiKey:${digest}`);
      return undefined;
    },
  };
}
