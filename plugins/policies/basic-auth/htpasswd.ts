import { createHash, timingSafeEqual } from 'node:crypto';
import apacheCrypt from 'apache-crypt';
import apacheMd5Module from 'apache-md5';
import bcrypt from 'bcryptjs';
import { FILE_SIZE_LIMITS, readSharedFile } from 'switchyard/sdk';
import type { SharedFetches } from 'switchyard/sdk';
import type { Logger } from 'switchyard/sdk';
import { WatchedFile } from '../../lib/watched-file/watched-file.ts';
import { parseShaCryptSetting, ROUNDS_MAX, ROUNDS_MIN, shaCryptAsync } from './sha-crypt.ts';

// apache-md5 is CommonJS (`module.exports = fn`) while its typings say `export default`: the default import is the
// function itself at run time.
const apacheMd5 = apacheMd5Module as unknown as (password: string, salt?: string) => string;

/** The hash formats an htpasswd line may use. Plaintext is deliberately not one of them. */
export type HashFormat = 'bcrypt' | 'apr1' | 'md5-crypt' | 'sha1' | 'sha256-crypt' | 'sha512-crypt' | 'crypt';

export interface HtpasswdEntry {
  readonly user: string;
  readonly format: HashFormat;
  readonly hash: string;
  /** 1-based line in the file. */
  readonly line: number;
}

export interface HtpasswdProblem {
  readonly line: number;
  readonly message: string;
}

const FORMATS: readonly (readonly [HashFormat, RegExp])[] = [
  ['bcrypt', /^\$2[aby]\$(?:0[4-9]|[12]\d|3[01])\$[./A-Za-z0-9]{53}$/],
  ['apr1', /^\$apr1\$[^$]{1,8}\$[./0-9A-Za-z]{22}$/],
  ['md5-crypt', /^\$1\$[^$]{1,8}\$[./0-9A-Za-z]{22}$/],
  ['sha1', /^\{SHA\}[A-Za-z0-9+/]{27}=$/],
  ['sha256-crypt', /^\$5\$(?:rounds=\d{1,10}\$)?[^$]{0,16}\$[./0-9A-Za-z]{43}$/],
  ['sha512-crypt', /^\$6\$(?:rounds=\d{1,10}\$)?[^$]{0,16}\$[./0-9A-Za-z]{86}$/],
  // Traditional DES crypt: 2 salt characters and 11 hash characters. Anything else unrecognized is refused.
  ['crypt', /^[./0-9A-Za-z]{13}$/],
];

export const SUPPORTED_FORMATS_TEXT = 'bcrypt ($2a$/$2b$/$2y$), apr1-MD5 ($apr1$), MD5-crypt ($1$), {SHA}, SHA-256-crypt ($5$), SHA-512-crypt ($6$) or traditional crypt';

/** The format of a stored hash, or undefined when it cannot be verified (plaintext, `$2x$`, argon2, ...). */
export function detectFormat(hash: string): HashFormat | undefined {
  for (const [format, re] of FORMATS) if (re.test(hash)) return format;
  return undefined;
}

/**
 * Parse htpasswd text: `user:hash` per line (anything after a second `:` is ignored, as Apache does), blank lines
 * and `#` comments skipped. Every problem is reported with its line; messages name users, never hashes.
 */
export function parseHtpasswd(text: string): { entries: Map<string, HtpasswdEntry>; problems: HtpasswdProblem[] } {
  const entries = new Map<string, HtpasswdEntry>();
  const problems: HtpasswdProblem[] = [];
  // A byte-order mark (Windows editors write one) would otherwise start the first user's name.
  const lines = (text.charCodeAt(0) === 0xfeff ? text.slice(1) : text).split('\n');
  lines.forEach((raw, i) => {
    const line = i + 1;
    const text = raw.replace(/\s+$/, '');
    if (text.trim() === '' || text.trimStart().startsWith('#')) return;
    const colon = text.indexOf(':');
    if (colon <= 0) {
      problems.push({ line, message: colon === 0 ? 'the user name is empty' : 'expected `user:hash`' });
      return;
    }
    const user = text.slice(0, colon);
    const rest = text.slice(colon + 1);
    const end = rest.indexOf(':');
    const hash = end === -1 ? rest : rest.slice(0, end);
    const format = detectFormat(hash);
    if (!format) {
      problems.push({ line, message: `the password of user \`${user}\` is in a format that cannot be verified (plaintext is not supported; use ${SUPPORTED_FORMATS_TEXT})` });
      return;
    }
    if (format === 'sha256-crypt' || format === 'sha512-crypt') {
      const m = /^\$[56]\$rounds=(\d+)\$/.exec(hash);
      if (m && (Number(m[1]) < ROUNDS_MIN || Number(m[1]) > ROUNDS_MAX)) {
        problems.push({ line, message: `the password of user \`${user}\` names rounds=${m[1]}, outside ${ROUNDS_MIN}\u2013${ROUNDS_MAX}` });
        return;
      }
    }
    const first = entries.get(user);
    if (first) {
      problems.push({ line, message: `user \`${user}\` is already defined on line ${first.line}` });
      return;
    }
    entries.set(user, { user, format, hash, line });
  });
  return { entries, problems };
}

/** Compare two strings in time that depends only on their lengths (both are hash outputs of a fixed format). */
function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a, 'latin1');
  const y = Buffer.from(b, 'latin1');
  if (x.length !== y.length) {
    timingSafeEqual(x, x);
    return false;
  }
  return timingSafeEqual(x, y);
}

/**
 * Check `password` (the raw bytes the client sent) against an entry. Cheap formats answer synchronously; bcrypt
 * and SHA-crypt answer with a promise and yield to the event loop while they work.
 */
export function verifyPassword(entry: HtpasswdEntry, password: Buffer): boolean | Promise<boolean> {
  switch (entry.format) {
    case 'bcrypt':
      // bcryptjs hashes the UTF-8 bytes of the string; compare() is constant-time and works in slices.
      return bcrypt.compare(password.toString('utf8'), entry.hash);
    case 'apr1':
    case 'md5-crypt':
      // apache-md5 and apache-crypt read one byte per character: latin1 keeps the client's bytes exact.
      return safeEqual(apacheMd5(password.toString('latin1'), entry.hash), entry.hash);
    case 'sha1':
      return safeEqual(`{SHA}${createHash('sha1').update(password).digest('base64')}`, entry.hash);
    case 'crypt':
      return safeEqual(apacheCrypt(password.toString('latin1'), entry.hash.slice(0, 2)), entry.hash);
    case 'sha256-crypt':
    case 'sha512-crypt':
      return shaCryptAsync(password, entry.hash).then((computed) => computed !== undefined && safeEqual(computed, entry.hash));
  }
}

/**
 * About how many microseconds checking a password against `entry` costs (bcryptjs and the SHA-crypt and MD5 code
 * here, measured on one core): only the order matters, to pick the costliest entry of a file.
 */
export function hashCostEstimate(entry: HtpasswdEntry): number {
  switch (entry.format) {
    case 'bcrypt':
      return 54 * 2 ** Number(entry.hash.slice(4, 6));
    case 'sha256-crypt':
    case 'sha512-crypt':
      return parseShaCryptSetting(entry.hash)!.rounds;
    case 'apr1':
    case 'md5-crypt':
      return 1200;
    case 'crypt':
      return 250;
    case 'sha1':
      return 1;
  }
}

/** The entry whose check costs the most (the first of equals), or undefined for an empty file. */
export function costliestEntry(entries: ReadonlyMap<string, HtpasswdEntry>): HtpasswdEntry | undefined {
  let best: HtpasswdEntry | undefined;
  let bestCost = -1;
  for (const entry of entries.values()) {
    const cost = hashCostEstimate(entry);
    if (cost > bestCost) [best, bestCost] = [entry, cost];
  }
  return best;
}

export { parseShaCryptSetting };

/**
 * An htpasswd file and its parsed users, kept in the plugin resource cache (one per path, shared by every route
 * naming it, kept across reloads). `load()` reads it at config load; a watcher re-reads it when it changes. A
 * change that does not parse is logged and ignored: the last good content keeps serving.
 */
export class HtpasswdStore {
  readonly path: string;
  entries: ReadonlyMap<string, HtpasswdEntry> = new Map();
  /**
   * What an unknown user's password is checked against: the costliest entry, so that the answer time of a user who
   * does not exist is that of the slowest one who does (a cheap first line made every other user stand out).
   */
  decoy: HtpasswdEntry | undefined;
  /** Changes whenever `entries` is replaced (a cache of verified credentials keys on it). */
  version = 0;
  private readonly logger: Logger;
  private readonly file: WatchedFile;
  private readonly fetches: SharedFetches | undefined;

  constructor(path: string, logger: Logger, fetches?: SharedFetches) {
    this.path = path;
    this.logger = logger;
    this.fetches = fetches;
    this.file = new WatchedFile(path, {
      removed: () => logger.warn('htpasswd file removed; keeping the users already loaded', { file: path }),
      changed: () => void this.reloadFromDisk(),
    });
  }

  /**
   * Read and parse the file now (a regular file of at most FILE_SIZE_LIMITS.htpasswd, read without blocking the
   * event loop). Resolves with the problems of its lines (the old users are kept) or undefined on success; rejects
   * with a FileReadError when it cannot be read (the old users are kept too).
   */
  load(): Promise<string[] | undefined> {
    return this.file.serialize(() => this.loadNow());
  }

  private async loadNow(): Promise<string[] | undefined> {
    // Once for the gateway, whichever worker asks first (the others reuse its read of the same file version).
    const text = await readSharedFile(this.fetches, this.path, FILE_SIZE_LIMITS.htpasswd, { watched: true });
    const { entries, problems } = parseHtpasswd(text);
    if (problems.length > 0) return problems.map((p) => `${this.path}:${p.line}: ${p.message}`);
    this.entries = entries;
    this.decoy = costliestEntry(entries);
    this.version++;
    return undefined;
  }

  /** Start watching for changes (idempotent). */
  watch(): void {
    this.file.watch();
  }

  private async reloadFromDisk(): Promise<void> {
    let problems: string[] | undefined;
    try {
      problems = await this.load();
    } catch (err) {
      problems = [`cannot read ${this.path}: ${(err as Error).message}`];
    }
    if (problems) this.logger.error('htpasswd file change ignored; keeping the previous users', { file: this.path, problems });
    else this.logger.info('htpasswd file reloaded', { file: this.path, users: this.entries.size });
  }

  close(): void {
    this.file.close();
  }
}
