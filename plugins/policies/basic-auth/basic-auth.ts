import { createHash, randomBytes } from 'node:crypto';
import { resolve } from 'node:path';
import { defineAttribute, jsonErrorReply, notChecked, principal } from 'switchyard/sdk';
import type { AttributeKey, CompileContext, Exchange, PolicyInstance, Reply } from 'switchyard/sdk';
import { AUTHORIZATION_ONLY, basicCredential } from '../../lib/credentials/credentials.ts';
import { HashGate } from './hash-gate.ts';
import { HtpasswdStore, verifyPassword } from './htpasswd.ts';
import type { HtpasswdEntry } from './htpasswd.ts';

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
/** Slow hashes waiting their turn (about 3 s of bcrypt at cost 10); past it a request gets 503 (hash-gate.ts). */
const MAX_WAITING_HASHES = 32;
/** One gate for the process: every basicAuth policy, of every config generation, shares the one event loop. */
const gate = new HashGate(MAX_WAITING_HASHES);
const SLOW_FORMATS: ReadonlySet<string> = new Set(['bcrypt', 'sha256-crypt', 'sha512-crypt']);

/** `verifyPassword`, slow formats through the gate: undefined when its queue is full (nothing was checked). */
function check(entry: HtpasswdEntry, password: Buffer): boolean | Promise<boolean> | undefined {
  if (!SLOW_FORMATS.has(entry.format)) return verifyPassword(entry, password);
  return gate.run(async () => verifyPassword(entry, password));
}

interface Verified {
  readonly attribute: BasicAuthAttribute;
  readonly version: number;
  readonly expiresAt: number;
}

export async function compileBasicAuth(config: BasicAuthConfig, ctx: CompileContext): Promise<PolicyInstance> {
  if (ctx.checkOnly) notChecked(ctx, `the htpasswd file \`${config.htpasswd.file}\``, ['htpasswd', 'file']);
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
  // Keyed by a salted digest of the credential, so the cache holds no passwords. One per file, kept across reloads
  // (entries carry the file version they were checked against): a reload does not send every user to the hasher.
  const { salt, cache } = ctx.resources.get(`basicAuth:verified:${path}`, () => ({ salt: randomBytes(16), cache: new Map<string, Verified>() }));

  const accept = (ex: Exchange, attribute: BasicAuthAttribute): undefined => {
    ex.set(basicAuthAttribute, attribute);
    ex.set(principal, `basic:${attribute.username}`);
    return undefined;
  };
  const invalid = (): Reply | undefined => (mode === 'permissive' ? undefined : reject('invalid credentials'));
  // Not the client's fault, so no challenge; permissive mode never rejects and passes it unauthenticated.
  const busy = (): Reply | undefined =>
    mode === 'permissive'
      ? undefined
      : jsonErrorReply(503, 'authentication_unavailable', 'basic authentication unavailable: too many passwords are being checked; retry shortly', { 'retry-after': '1' });

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
        // Spend what the costliest known user costs, so the answer time does not tell which users exist.
        const decoy = store.decoy;
        if (decoy === undefined) return invalid();
        // Through the gate too: a full queue answers the same for every user name.
        const spent = check(decoy, password);
        if (spent === undefined) return busy();
        return spent instanceof Promise ? spent.then(invalid, invalid) : invalid();
      }
      const done = (ok: boolean): Reply | undefined => {
        if (!ok) return invalid();
        const attribute = Object.freeze({ username });
        if (cache.size >= CACHE_ENTRIES) cache.delete(cache.keys().next().value!);
        cache.set(cacheKey, { attribute, version, expiresAt: Date.now() + CACHE_MAX_AGE_MS });
        return accept(ex, attribute);
      };
      const result = check(entry, password);
      if (result === undefined) return busy();
      return result instanceof Promise ? result.then(done, () => invalid()) : done(result);
    },
  };
}
