import { constants } from 'node:fs';
import { open, stat } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import type { Stats } from 'node:fs';
import type { SharedFetches } from './shared.ts';

// Files the config names (keys, certificates, JWKS, htpasswd, OpenAPI documents, the config itself) are read
// through one function: a device (`/dev/zero`), a FIFO or an oversized file must be a config error, never an
// out-of-memory process or an event loop blocked on a pipe (docs/adr/0016-config-file-reading-and-limits.md).

const MiB = 1024 * 1024;

/** Size caps of the files a config names, by kind (docs/security.md "Files named by the config"). */
export const FILE_SIZE_LIMITS = {
  /** `backendAuth.key.file`, PEM certificates, keys and CA bundles. */
  key: 1 * MiB,
  /** `jwks.file`. */
  jwks: 1 * MiB,
  /** `basicAuth.htpasswd.file` (about 200,000 users of hashed passwords). */
  htpasswd: 16 * MiB,
  /** An OpenAPI document (`openapi.schema.file`); large public APIs are a few MiB. */
  document: 32 * MiB,
  /** The `package.json` of a plugin module named in `config.plugins`. */
  manifest: 1 * MiB,
  /** The config file itself (100,000 routes take about 20 MiB of YAML). */
  config: 64 * MiB,
} as const;

/** Why a file the config names could not be read; the message is a phrase to put after the file's name. */
export class FileReadError extends Error {
  /** The errno code (`ENOENT`, `EACCES`), `ENOTREG` for a non-regular file, `EFBIG` for one over the cap. */
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.name = 'FileReadError';
    this.code = code;
  }
}

const CHUNK = 64 * 1024;
// O_NONBLOCK: opening a FIFO (even one swapped in after a stat) returns at once instead of waiting for a writer;
// it changes nothing for a regular file. O_NOCTTY: a terminal device never becomes the controlling terminal.
const OPEN_FLAGS = constants.O_RDONLY | (constants.O_NONBLOCK ?? 0) | (constants.O_NOCTTY ?? 0);

function sizeText(bytes: number): string {
  return bytes % MiB === 0 ? `${bytes / MiB} MiB` : bytes % 1024 === 0 ? `${bytes / 1024} KiB` : `${bytes} bytes`;
}

function kindOf(st: Stats): string {
  if (st.isDirectory()) return 'a directory';
  if (st.isFIFO()) return 'a FIFO (named pipe)';
  if (st.isCharacterDevice()) return 'a character device';
  if (st.isBlockDevice()) return 'a block device';
  if (st.isSocket()) return 'a socket';
  return 'not a regular file';
}

function openError(err: NodeJS.ErrnoException): FileReadError {
  const code = err.code ?? 'EIO';
  const why: Record<string, string> = {
    ENOENT: 'no such file',
    EACCES: 'permission denied',
    EPERM: 'permission denied',
    EISDIR: 'is a directory',
    ENOTDIR: 'a part of the path is not a directory',
    ELOOP: 'too many symbolic links',
    ENAMETOOLONG: 'the path is too long',
  };
  return new FileReadError(code, why[code] ?? err.message);
}

function tooLarge(maxBytes: number): FileReadError {
  return new FileReadError('EFBIG', `is larger than ${sizeText(maxBytes)}, the limit for this file`);
}

/**
 * Read a file named by the config, as bytes: only a regular file, at most `maxBytes`, without blocking the event
 * loop (the open, the `fstat` of the opened descriptor and the reads run on libuv's pool). Rejects with a
 * {@link FileReadError} whose message says why (`no such file`, `is a FIFO (named pipe), not a regular file`,
 * `is larger than 1 MiB, ...`). The kind is checked on the descriptor actually opened, so a file replaced between a
 * `stat` and the open cannot slip through. A file that grows past the cap while being read is refused too.
 */
export async function readLocalFileBytes(path: string, maxBytes: number): Promise<Buffer> {
  let handle: FileHandle;
  try {
    handle = await open(path, OPEN_FLAGS);
  } catch (err) {
    throw openError(err as NodeJS.ErrnoException);
  }
  try {
    const st = await handle.stat();
    if (!st.isFile()) throw new FileReadError('ENOTREG', st.isDirectory() ? 'is a directory' : `is ${kindOf(st)}, not a regular file`);
    if (st.size > maxBytes) throw tooLarge(maxBytes);
    // One more byte than the cap: reading it means the file grew past the cap.
    const buf = Buffer.allocUnsafe(Math.min(maxBytes + 1, Math.max(st.size + 1, CHUNK)));
    let total = 0;
    for (;;) {
      if (total === buf.length) break;
      const { bytesRead } = await handle.read(buf, total, buf.length - total, total);
      if (bytesRead === 0) break;
      total += bytesRead;
    }
    if (total > maxBytes) throw tooLarge(maxBytes);
    if (total === buf.length) {
      // The buffer filled without reaching the cap: the file grew after the fstat; read the rest in chunks.
      const chunks = [buf];
      for (;;) {
        const more = Buffer.allocUnsafe(CHUNK);
        const { bytesRead } = await handle.read(more, 0, CHUNK, total);
        if (bytesRead === 0) break;
        total += bytesRead;
        if (total > maxBytes) throw tooLarge(maxBytes);
        chunks.push(more.subarray(0, bytesRead));
      }
      return Buffer.concat(chunks, total);
    }
    return buf.subarray(0, total);
  } catch (err) {
    if (err instanceof FileReadError) throw err;
    throw openError(err as NodeJS.ErrnoException);
  } finally {
    await handle.close().catch(() => undefined);
  }
}

/** {@link readLocalFileBytes} decoded as UTF-8. */
export async function readLocalFile(path: string, maxBytes: number): Promise<string> {
  return (await readLocalFileBytes(path, maxBytes)).toString('utf8');
}

const NOT_READ = "not read: the admin UI's validator reads no file and fetches nothing a pasted config names (ADR 0131)";

/**
 * `ctx.sharedFetches` of a check-only compile (the admin UI's validator, ADR 0131): it fetches nothing, and
 * {@link readSharedFile} given it reads nothing, not even a stat, whichever plugin asks and whether or not it looks
 * at `ctx.checkOnly` first.
 */
export const NO_FETCHES: SharedFetches = {
  fetch: () => Promise.reject(new Error(NOT_READ)),
};

/** How long a read by another worker of a file that has not changed since may be reused. */
const SHARED_READ_MAX_AGE_MS = 10 * 60_000;

/** What identifies one version of a file without reading it: inode, size, change and modification times. */
export async function fileStamp(path: string): Promise<string | undefined> {
  try {
    const s = await stat(path);
    return `${s.ino}:${s.size}:${s.mtimeMs}:${s.ctimeMs}`;
  } catch {
    return undefined;
  }
}

/**
 * {@link readLocalFile} once for the whole gateway, however many workers it runs (`config.workers`, ADR 0047): pass
 * `ctx.sharedFetches`. Every worker stats the file (inode, size, times; no content read); the read goes through the
 * shared fetches, so the first worker asking reads it and the others take its text as long as the file still has
 * the version they saw. A worker whose file looks newer than the shared read asks for a newer one (one more read).
 * Without workers, or with `fetches` undefined, it is `readLocalFile`; errors are `readLocalFile`'s. With
 * {@link NO_FETCHES} (a paste's compile) it reads nothing and rejects (`ENOTCHECKED`). `watched`: the caller watches
 * the file itself and reads it again on a change (`WatchedFile`), so a compile does not note it.
 */
export async function readSharedFile(fetches: SharedFetches | undefined, path: string, maxBytes: number, options: { watched?: boolean } = {}): Promise<string> {
  if (fetches === NO_FETCHES) throw new FileReadError('ENOTCHECKED', NOT_READ);
  const seen = fetches && (await fileStamp(path));
  // A compile's fetches note the files a config names, so that a new version reloads it (ADR 0184).
  if (!options.watched) (fetches as { noteFile?: (path: string, stamp: string | undefined) => void } | undefined)?.noteFile?.(path, seen);
  if (!fetches || seen === undefined) return readLocalFile(path, maxBytes);
  const load = async (): Promise<{ stamp: string | undefined; text: string }> => {
    const before = await fileStamp(path);
    return { stamp: before, text: await readLocalFile(path, maxBytes) };
  };
  let after = 0;
  for (let tries = 0; tries < 3; tries++) {
    const got = await fetches.fetch(`file:${path}`, { maxAgeMs: SHARED_READ_MAX_AGE_MS, after }, load);
    if (got.value.stamp === seen) return got.value.text;
    after = got.at;
  }
  // The file keeps changing under us: this worker reads for itself.
  return readLocalFile(path, maxBytes);
}

/**
 * `JSON.parse` of a file's text whose error never quotes the text: V8's message does (`Unexpected token 'g',
 * "ghp_abc..." is not valid JSON`, the whole text when it is short), and a file named by mistake, or through the admin
 * UI's validator, may hold a secret. The error is a SyntaxError saying what went wrong, with the position when V8
 * gives one.
 */
export function parseJsonFileText(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    const message = (err as Error).message.replace(/^(Unexpected token) .*? is not valid JSON$/s, '$1').replace(/ is not valid JSON$/, '');
    throw new SyntaxError(message);
  }
}
