import { unwatchFile, watchFile } from 'node:fs';
import type { Stats } from 'node:fs';

/** How often a watched file's status is polled for changes. */
const WATCH_INTERVAL_MS = 1000;

/** What a watched file's owner does when the file changes on disk. */
export interface WatchedFileEvents {
  /** The file's content may have changed: re-read it (through `WatchedFile.serialize`). */
  changed(): void;
  /** The file is gone; the owner keeps what it loaded last. */
  removed(): void;
}

/**
 * A local file the config names, kept in the plugin resource cache (one per path, across reloads) and polled for
 * changes (fs.watchFile: it also sees a file replaced by rename, as editors and ConfigMap updates do). Reads run
 * one after another through `serialize`, so an older read never replaces the content of a newer one.
 */
export class WatchedFile {
  readonly path: string;
  private readonly events: WatchedFileEvents;
  private watching = false;
  private loading: Promise<unknown> = Promise.resolve();
  private readonly onChange = (curr: Stats, prev: Stats): void => {
    if (curr.mtimeMs === prev.mtimeMs && curr.size === prev.size && curr.ino === prev.ino) return;
    if (curr.nlink === 0 && curr.mtimeMs === 0) this.events.removed();
    else this.events.changed();
  };

  constructor(path: string, events: WatchedFileEvents) {
    this.path = path;
    this.events = events;
  }

  /** Runs `read` after every read queued before it; a failed read does not stop the later ones. */
  serialize<T>(read: () => Promise<T>): Promise<T> {
    const next = this.loading.then(read);
    this.loading = next.catch(() => undefined);
    return next;
  }

  /** Start watching (idempotent). */
  watch(): void {
    if (this.watching) return;
    this.watching = true;
    watchFile(this.path, { interval: WATCH_INTERVAL_MS, persistent: false }, this.onChange);
  }

  close(): void {
    if (this.watching) unwatchFile(this.path, this.onChange);
    this.watching = false;
  }
}
