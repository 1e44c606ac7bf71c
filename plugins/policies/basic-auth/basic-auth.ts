import { createHash, randomBytes } from 'node:crypto';
import { resolve } from 'node:path';
import { defineAttribute, jsonErrorReply, principal } from 'switchyard/sdk';
import type { AttributeKey, CompileContext, Exchange, PolicyInstance, Reply } from 'switchyard/sdk';
import { AUTHORIZATION_ONLY, basicCredential } from '../../lib/credentials/credentials.ts';
import { HtpasswdStore, verifyPassword } from './htpasswd.ts';

export interface BasicAuthConfig {
  htpasswd: { file: string };
  realm?: string;
  mode?: 'strict' | 'optional' | 'permissive';
}

/** What CEL sees as `basicAuth`. */
export interface BasicAuthAttribute {
  readonly username: string;
}

/** The `basicAuth` attribute key (CEL `basicAuth.username`). */
export const basicAuthAttribute: AttributeKey<BasicAuthAttribute> = defineAttribute<BasicAuthAttribute>('basicAuth');

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
/** Verified credentials remembered so a repeat skips bcrypt/SHA-crypt; bounded in size and age. */
const CACHE_ENTRIES = 1024;
const CACHE_MAX_AGE_MS = 5 * 60_000;
/**
 * Longest password hashed, in bytes (htpasswd itself refuses more than 255). SHA-crypt and MD5-crypt cost grows with
 * the password's length (SHA-crypt's with its square): a 12 KiB password blocked the event loop for about 150 ms.
 */
export const MAX_PASSWORD_BYTES = 1024;

interface Verified {
  readonly attribute: BasicAuthAttribute;
  readonly version: number;
  readonly expiresAt: number;
}

export async function compileBasicAuth(config: BasicAuthConfig, ctx: CompileContext): Promise<PolicyInstance> {
  const path = resolve(ctx.cwd, config.htpasswd.file);
  const logger = ctx.logger.child({ policy: 'basicAuth' });
  const store = ctx.resources.get(`basicAuth:htpasswd:${path}`, () => new HtpasswdStore(path, logger, ctx.sharedFetches), (s) => s.close());
  // Read at every config load: a bad file is a config error then; later changes are picked up by the watcher.
  let problems: string[] | undefined;
  try {
    problems = await store.load();
  } catch (err) {
    return ctx.fail(`cannot read the htpasswd file \`${config.htpasswd.file}\` (${path}): ${(err as Error).message}`, ['htpasswd', 'file']);
  }
  if (problems) ctx.fail(`the htpasswd file \`${config.htpasswd.file}\` cannot be used:\n  ${problems.join('\n  ')}`, ['htpasswd', 'file']);
  store.watch();

  const mode = config.mode ?? 'optional';
  const realm = (config.realm ?? 'Restricted').replace(/["\\]/g, '\\$&');
  const challenge = `Basic realm="${realm}"`;
  const reject = (message: string): Reply =>
    jsonErrorReply(401, 'authentication_failed', `basic authentication failure: ${message}`, { 'www-authenticate': challenge });
  // Keyed by a salted digest of the credential, so the cache holds no passwords.
  const salt = randomBytes(16);
  const cache = new Map<string, Verified>();

  const accept = (ex: Exchange, attribute: BasicAuthAttribute): undefined => {
    ex.set(basicAuthAttribute, attribute);
    ex.set(principal, `basic:${attribute.username}`);
    return undefined;
  };
  const invalid = (): Reply | undefined => (mode === 'permissive' ? undefined : reject('invalid credentials'));

  return {
    credentialHeaders: AUTHORIZATION_ONLY,
    onRequest(ex) {
      const credential = basicCredential(ex.headers.authorization);
      if (credential === undefined) return mode === 'strict' ? reject('no basic authentication credentials found') : undefined;
      const cacheKey = createHash('sha256').update(salt).update(credential).digest('base64');
      const hit = cache.get(cacheKey);
      if (hit !== undefined) {
        if (hit.version === store.version && hit.expiresAt > Date.now()) return accept(ex, hit.attribute);
        cache.delete(cacheKey);
      }
      if (!BASE64.test(credential)) return invalid();
      const decoded = Buffer.from(credential, 'base64');
      const colon = decoded.indexOf(0x3a);
      if (colon < 0) return invalid();
      const username = decoded.subarray(0, colon).toString('utf8');
      const password = decoded.subarray(colon + 1);
      // Refused before the user is looked up: the answer time says nothing about which users exist.
      if (password.length > MAX_PASSWORD_BYTES) return invalid();
      const entries = store.entries;
      const version = store.version;
      const entry = entries.get(username);
      if (entry === undefined) {
        // Spend about the time a known user costs, so the answer time does not tell which users exist.
        const decoy = entries.values().next().value;
        if (decoy === undefined) return invalid();
        const spent = verifyPassword(decoy, password);
        return spent instanceof Promise ? spent.then(invalid, invalid) : invalid();
      }
      const done = (ok: boolean): Reply | undefined => {
        if (!ok) return invalid();
        const attribute = Object.freeze({ username });
        if (cache.size >= CACHE_ENTRIES) cache.delete(cache.keys().next().value!);
        cache.set(cacheKey, { attribute, version, expiresAt: Date.now() + CACHE_MAX_AGE_MS });
        return accept(ex, attribute);
      };
      const result = verifyPassword(entry, password);
      return result instanceof Promise ? result.then(done, () => invalid()) : done(result);
    },
  };
}
