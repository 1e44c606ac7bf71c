// The embedded store never checkpoints its WAL on the serving thread (ADR 0048): a checkpoint (copy + fsync) inside
// a synchronous `node:sqlite` commit stalls the event loop for tens of ms. Proved deterministically by file sizes,
// not by timing: with the background checkpointer idle, the WAL grows past SQLite's 1,000-page automatic threshold
// and the database file is untouched (so no commit on this thread checkpointed); one background checkpoint then
// folds everything in and the next commit starts the WAL over.
import { strict as assert } from 'node:assert';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { SqliteKeyStore } from './sqlite-store.ts';

const dir = mkdtempSync(join(tmpdir(), 'swy-sqlite-store-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const lines = ['a', 'b', 'c', 'd', 'e', 'f'].map((x) => ({ counter: `k:key:usd:month:${x}`, limit: 1e12, amount: 10, expiresAt: 0 }));
const deltas = lines.map((l) => ({ counter: l.counter, amount: -4, expiresAt: 0 }));
const size = (file: string): number => statSync(file).size;
/** A settlement in its own transaction (settlements are otherwise queued for the next reservation). */
const settleNow = (store: SqliteKeyStore): void => {
  store.settle(deltas);
  store.flush();
};

test('sqlite store: commits on the serving thread never checkpoint; the background connection does', async () => {
  const path = join(dir, 'keys.db');
  // An hour between background checkpoints: only the explicit one below runs.
  const store = await SqliteKeyStore.open(path, { everyMs: 3_600_000 });
  try {
    assert.equal(store.reserve(lines), -1);
    const dbBefore = size(path);
    // 1,500 requests = 3,000 write transactions of at least one page each: well past the 1,000-page automatic
    // checkpoint SQLite runs inside a commit by default.
    for (let i = 0; i < 1500; i++) {
      assert.equal(store.reserve(lines), -1);
      settleNow(store);
    }
    assert.equal(size(path), dbBefore, 'the database file changed: a commit on the serving thread ran a checkpoint');
    const walFrames = Math.floor(size(`${path}-wal`) / 4096);
    assert.ok(walFrames > 2000, `the WAL holds ${walFrames} pages: it was checkpointed and restarted on the serving thread`);

    const r = await store.checkpoint();
    assert.ok(r && r.error === undefined && r.busy === 0 && r.checkpointed === r.log && (r.log ?? 0) > 2000, `background checkpoint: ${JSON.stringify(r)}`);
    assert.ok(size(path) > dbBefore, 'the background checkpoint copied the counters into the database file');
    // Everything copied: the next commit writes the WAL from its beginning again, the file does not grow.
    const walSize = size(`${path}-wal`);
    for (let i = 0; i < 100; i++) settleNow(store);
    assert.equal(size(`${path}-wal`), walSize, 'the WAL kept growing after a complete checkpoint');
    assert.deepEqual(await store.values([lines[0]!.counter]), [1501 * 10 - 1600 * 4]);
  } finally {
    await store.close();
  }
});

test('sqlite store: a checkpoint past the restart threshold starts the WAL over; closing removes it', async () => {
  const path = join(dir, 'busy.db');
  const store = await SqliteKeyStore.open(path, { everyMs: 3_600_000, restartFrames: 500 });
  try {
    for (let i = 0; i < 1000; i++) settleNow(store);
    const r = await store.checkpoint();
    assert.ok(r && r.error === undefined && r.busy === 0, `checkpoint: ${JSON.stringify(r)}`);
    // The WAL starts over, so further writes reuse the file instead of growing it.
    const walSize = size(`${path}-wal`);
    for (let i = 0; i < 400; i++) settleNow(store);
    assert.equal(size(`${path}-wal`), walSize);
  } finally {
    await store.close();
  }
  // The last connection to close (the background one) folded the WAL in and removed it.
  assert.throws(() => statSync(`${path}-wal`), { code: 'ENOENT' });
});

test('sqlite store: the timer checkpoints without being asked', async () => {
  const path = join(dir, 'timer.db');
  const store = await SqliteKeyStore.open(path, { everyMs: 20 });
  try {
    const dbBefore = size(path);
    for (let i = 0; i < 200; i++) settleNow(store);
    const deadline = Date.now() + 20_000;
    while (size(path) === dbBefore && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    assert.ok(size(path) > dbBefore, 'no background checkpoint within 20 s');
  } finally {
    await store.close();
  }
});

test('sqlite store: settlements are summed and written with the next reservation, or by a timer', async () => {
  const path = join(dir, 'settle.db');
  const store = await SqliteKeyStore.open(path, { everyMs: 3_600_000 });
  try {
    assert.equal(store.reserve(lines), -1);
    const wal = size(`${path}-wal`);
    store.settle(deltas);
    store.settle(deltas);
    assert.equal(size(`${path}-wal`), wal, 'a settlement was written at once');
    // A reservation refused by a budget still writes the queued settlements.
    const tight = [{ ...lines[0]!, limit: 1 }];
    assert.equal(store.reserve(tight), 0);
    assert.ok(size(`${path}-wal`) > wal);
    assert.deepEqual(await store.values([lines[0]!.counter, lines[5]!.counter]), [10 - 8, 10 - 8]);
    store.settle(deltas);
    const deadline = Date.now() + 10_000;
    const other = await SqliteKeyStore.open(path, { everyMs: 3_600_000 });
    try {
      // Another connection (another process would see the same) reads it once the timer has written it.
      while ((await other.values([lines[0]!.counter]))[0] !== -2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
      assert.deepEqual(await other.values([lines[0]!.counter]), [-2]);
    } finally {
      await other.close();
    }
  } finally {
    await store.close();
  }
});
