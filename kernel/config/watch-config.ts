import { watch } from 'node:fs';
import type { FSWatcher } from 'node:fs';
import { basename, dirname } from 'node:path';

/**
 * Calls `onChange` after the config file changes. Watches the directory, not the file, so editors and
 * ConfigMap updates that replace the file by rename are seen; bursts of events are debounced.
 */
export function watchConfigFile(file: string, onChange: () => void, debounceMs = 150): () => void {
  const name = basename(file);
  let timer: NodeJS.Timeout | undefined;
  let watcher: FSWatcher | undefined;
  try {
    watcher = watch(dirname(file), { persistent: false }, (_event, changed) => {
      if (changed !== null && changed !== name && !String(changed).startsWith('..')) return;
      clearTimeout(timer);
      timer = setTimeout(onChange, debounceMs);
    });
  } catch {
    return () => undefined;
  }
  return () => {
    clearTimeout(timer);
    watcher?.close();
  };
}
