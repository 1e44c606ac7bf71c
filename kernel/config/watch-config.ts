import { lstatSync, statSync, watch } from 'node:fs';
import type { FSWatcher, Stats } from 'node:fs';
import { lstat, stat } from 'node:fs/promises';
import { basename, dirname } from 'node:path';

/**
 * Calls `onChange` after the config file changes; bursts of events are debounced.
 *
 * The file itself is watched (its inode, through any symlinks), not its directory: the key store's WAL and access
 * logs often live beside the config, and a directory watch woke the event loop for every one of their writes. After
 * each burst the watch moves to whatever the path names now, so an editor's save by rename, or a file deleted and
 * made again, is followed. The directory is watched as well while the path names nothing (until it appears) and while
 * the path is itself a symlink: a Kubernetes ConfigMap is updated by swapping its `..data` link, which changes what
 * the path names without touching the old file (such a mount holds only the config's own entries).
 */
export function watchConfigFile(file: string, onChange: () => void, debounceMs = 150): () => void {
  const name = basename(file);
  let timer: NodeJS.Timeout | undefined;
  let fileWatcher: FSWatcher | undefined;
  let dirWatcher: FSWatcher | undefined;
  /** The watched file's identity (`dev:ino`), to tell whether the path names another file now. */
  let watched = '';
  let closed = false;
  /** Raised per rearm: an older rearm that finishes later gives way. */
  let generation = 0;

  const changed = (): void => {
    clearTimeout(timer);
    timer = setTimeout(settle, debounceMs);
  };
  const settle = (): void => {
    if (closed) return;
    void rearm().then(onChange);
  };
  const closeFile = (): void => {
    fileWatcher?.close();
    fileWatcher = undefined;
    watched = '';
  };
  const watchDir = (on: boolean): void => {
    if (!on) {
      dirWatcher?.close();
      dirWatcher = undefined;
      return;
    }
    if (dirWatcher) return;
    try {
      dirWatcher = watch(dirname(file), { persistent: false }, (_event, entry) => {
        if (entry !== null && entry !== name && !String(entry).startsWith('..')) return;
        changed();
      });
      dirWatcher.on('error', () => undefined);
    } catch {
      dirWatcher = undefined;
    }
  };
  /** Watch what the path names now (and its directory when needed); resolves once done. */
  const rearm = async (): Promise<void> => {
    const mine = ++generation;
    const [target, link] = await Promise.all([stat(file).catch(() => undefined), lstat(file).catch(() => undefined)]);
    if (closed || mine !== generation) return;
    arm(target, link);
  };
  const arm = (target: Stats | undefined, link: Stats | undefined): void => {
    watchDir(target === undefined || link?.isSymbolicLink() === true);
    if (target === undefined) return closeFile();
    const identity = `${target.dev}:${target.ino}`;
    if (fileWatcher && identity === watched) return;
    closeFile();
    try {
      fileWatcher = watch(file, { persistent: false }, changed);
      // A watch that fails (its file gone, a lost inotify watch) is not used again: the next look makes a new one.
      fileWatcher.on('error', () => {
        closeFile();
        changed();
      });
      watched = identity;
    } catch {
      watchDir(true);
    }
  };

  // The first watch is set before returning (the file was just read: one stat), so no change after it is missed.
  const quiet = <T>(f: () => T): T | undefined => {
    try {
      return f();
    } catch {
      return undefined;
    }
  };
  arm(quiet(() => statSync(file)), quiet(() => lstatSync(file)));
  return () => {
    closed = true;
    clearTimeout(timer);
    closeFile();
    watchDir(false);
  };
}
