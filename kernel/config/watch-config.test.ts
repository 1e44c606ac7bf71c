// watchConfigFile: the file is watched, not its directory (a key store's WAL or an access log beside the config must
// not wake the event loop per write), and the watch follows saves by rename, deletion and recreation, and symlink swaps.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { appendFileSync, mkdirSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, describe, it } from 'node:test';
import { testTempDir } from '../../test/helpers/temp-dir.ts';
import { watchConfigFile } from './watch-config.ts';

const DEBOUNCE = 30;

/** Wait until `count()` reaches `n` (or fail after 3 s). */
async function until(count: () => number, n: number): Promise<void> {
  const deadline = Date.now() + 3000;
  while (count() < n) {
    if (Date.now() > deadline) throw new Error(`expected ${n} change(s), saw ${count()}`);
    await sleep(10);
  }
}

describe('watchConfigFile', () => {
  const stops: (() => void)[] = [];
  after(() => stops.forEach((s) => s()));

  it('is not woken by writes to other files in the config directory (a WAL, an access log)', async () => {
    const dir = testTempDir('watch-config-');
    const file = join(dir, 'config.yaml');
    writeFileSync(file, 'a: 1\n');
    // Count the watchers' callbacks through node:fs (the module's ESM bindings follow the patched function).
    let wakes = 0;
    const original = fs.watch;
    (fs as { watch: unknown }).watch = ((path: string, options: fs.WatchOptions, listener: fs.WatchListener<string>) =>
      original(path, options, (event, name) => {
        wakes++;
        listener(event, name as string | null);
      })) as typeof fs.watch;
    syncBuiltinESMExports();
    let changes = 0;
    try {
      stops.push(watchConfigFile(file, () => changes++, DEBOUNCE));
    } finally {
      (fs as { watch: unknown }).watch = original;
      syncBuiltinESMExports();
    }
    for (let i = 0; i < 50; i++) {
      appendFileSync(join(dir, 'switchyard-keys.db-wal'), Buffer.alloc(4096));
      await sleep(1);
    }
    await sleep(DEBOUNCE * 3);
    assert.equal(wakes, 0, 'a write beside the config woke the watcher');
    assert.equal(changes, 0);
    writeFileSync(file, 'a: 2\n');
    await until(() => changes, 1);
    assert.ok(wakes > 0);
  });

  it('sees every later edit after a save by rename (the watch moves to the new file)', async () => {
    const dir = testTempDir('watch-config-');
    const file = join(dir, 'config.yaml');
    writeFileSync(file, 'a: 1\n');
    let changes = 0;
    stops.push(watchConfigFile(file, () => changes++, DEBOUNCE));
    writeFileSync(join(dir, '.config.yaml.swp'), 'a: 2\n');
    renameSync(join(dir, '.config.yaml.swp'), file);
    await until(() => changes, 1);
    await sleep(DEBOUNCE * 3);
    const seen = changes;
    // An edit in place of the new file: a watch left on the replaced file would not see it.
    writeFileSync(file, 'a: 3\n');
    await until(() => changes, seen + 1);
  });

  it('sees a config deleted and written again', async () => {
    const dir = testTempDir('watch-config-');
    const file = join(dir, 'config.yaml');
    writeFileSync(file, 'a: 1\n');
    let changes = 0;
    stops.push(watchConfigFile(file, () => changes++, DEBOUNCE));
    rmSync(file);
    await until(() => changes, 1);
    await sleep(DEBOUNCE * 3);
    const seen = changes;
    writeFileSync(file, 'a: 2\n');
    await until(() => changes, seen + 1);
    await sleep(DEBOUNCE * 3);
    writeFileSync(file, 'a: 3\n');
    await until(() => changes, seen + 2);
  });

  it('sees a symlink swap that leaves the old target in place', async () => {
    const dir = testTempDir('watch-config-');
    mkdirSync(join(dir, 'v1'));
    mkdirSync(join(dir, 'v2'));
    writeFileSync(join(dir, 'v1', 'config.yaml'), 'a: 1\n');
    writeFileSync(join(dir, 'v2', 'config.yaml'), 'a: 2\n');
    symlinkSync('v1', join(dir, '..data'));
    symlinkSync('..data/config.yaml', join(dir, 'config.yaml'));
    let changes = 0;
    stops.push(watchConfigFile(join(dir, 'config.yaml'), () => changes++, DEBOUNCE));
    symlinkSync('v2', join(dir, '..data_tmp'));
    renameSync(join(dir, '..data_tmp'), join(dir, '..data'));
    await until(() => changes, 1);
    await sleep(DEBOUNCE * 3);
    const seen = changes;
    writeFileSync(join(dir, 'v2', 'config.yaml'), 'a: 3\n');
    await until(() => changes, seen + 1);
  });

  it('stops calling after stop', async () => {
    const dir = testTempDir('watch-config-');
    const file = join(dir, 'config.yaml');
    writeFileSync(file, 'a: 1\n');
    let changes = 0;
    const stop = watchConfigFile(file, () => changes++, DEBOUNCE);
    stop();
    writeFileSync(file, 'a: 2\n');
    await sleep(DEBOUNCE * 4);
    assert.equal(changes, 0);
  });
});
