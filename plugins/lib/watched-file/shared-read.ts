import { stat } from 'node:fs/promises';
import { readLocalFile } from 'switchyard/sdk';
import type { SharedFetches } from 'switchyard/sdk';

/** How long a read by another worker of a file that has not changed since may be reused. */
const SHARED_READ_MAX_AGE_MS = 10 * 60_000;

/** What identifies one version of a file without reading it: inode, size, change and modification times. */
async function stamp(path: string): Promise<string | undefined> {
  try {
    const s = await stat(path);
    return `${s.ino}:${s.size}:${s.mtimeMs}:${s.ctimeMs}`;
  } catch {
    return undefined;
  }
}

/**
 * `readLocalFile` once for the whole gateway (issue 11: a config-named file is read once per change, not once per
 * worker). Every worker stats the file (cheap, no content); the read goes through `sharedFetches`, so the first
 * worker asking reads it and the others get its text, as long as the file still has the version they saw. A worker
 * whose file looks newer than the shared read asks for a newer one (which reads again, once). Without workers this
 * (or `fetches` undefined) this is `readLocalFile`. Errors are `readLocalFile`'s.
 */
export async function readSharedFile(fetches: SharedFetches | undefined, path: string, maxBytes: number): Promise<string> {
  const seen = fetches && (await stamp(path));
  if (!fetches || seen === undefined) return readLocalFile(path, maxBytes);
  const load = async (): Promise<{ stamp: string | undefined; text: string }> => {
    const before = await stamp(path);
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
