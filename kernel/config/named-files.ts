import type { SharedFetches } from '../sdk/shared.ts';
import { fileStamp } from '../sdk/read-file.ts';
import { watchConfigFile } from './watch-config.ts';

/** The version of each file a config read (`fileStamp`, undefined when it could not be looked at), by path. */
export type NamedFileStamps = ReadonlyMap<string, string | undefined>;

/**
 * `ctx.sharedFetches` of one compile: the gateway's shared fetches, noting each file `readSharedFile` reads for the
 * config (a `backendAuth.key.file`, `backendTLS` PEMs, a `jwks.file`) with the version it saw. Files whose owner
 * watches them itself (htpasswd, price catalogs, OpenAPI documents: `WatchedFile`) are read with `watched` and not
 * noted. A change to a noted file is a change to the config (ADR 0184).
 */
export class NamedFiles implements SharedFetches {
  readonly stamps = new Map<string, string | undefined>();
  private readonly inner: SharedFetches;

  constructor(inner: SharedFetches) {
    this.inner = inner;
  }

  fetch<T>(key: string, want: { readonly maxAgeMs: number; readonly after?: number }, load: () => Promise<T>): Promise<{ value: T; at: number }> {
    return this.inner.fetch(key, want, load);
  }

  noteFile(path: string, stamp: string | undefined): void {
    if (!this.stamps.has(path)) this.stamps.set(path, stamp);
  }
}

/** Whether any file of `stamps` is another version now (replaced, edited, removed). */
export async function namedFilesChanged(stamps: NamedFileStamps): Promise<boolean> {
  const now = await Promise.all([...stamps.keys()].map((path) => fileStamp(path)));
  return [...stamps.values()].some((stamp, i) => stamp !== now[i]);
}

/**
 * The named files of the live config, watched (when `onChange` is given) as the config file is: through symlinks
 * and Kubernetes' `..data` swaps, every time. `follow` after each applied config; `changed` tells a SIGHUP whether
 * the live config is stale although its text is not.
 */
export class NamedFileWatch {
  private readonly onChange: (() => void) | undefined;
  private stamps: NamedFileStamps = new Map();
  private watched = '';
  private stop: (() => void) | undefined;

  constructor(onChange: (() => void) | undefined) {
    this.onChange = onChange;
  }

  follow(stamps: NamedFileStamps): void {
    this.stamps = stamps;
    const paths = [...stamps.keys()].sort();
    if (this.onChange === undefined || paths.join('\n') === this.watched) return;
    this.close();
    this.watched = paths.join('\n');
    const stops = paths.map((path) => watchConfigFile(path, this.onChange!));
    this.stop = () => stops.forEach((s) => s());
  }

  changed(): Promise<boolean> {
    return namedFilesChanged(this.stamps);
  }

  close(): void {
    this.stop?.();
    this.stop = undefined;
    this.watched = '';
  }
}
