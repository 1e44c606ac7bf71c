// The embedded store never checkpoints its WAL on the serving thread (ADR 0048): a checkpoint (copy + fsync) inside
// a synchronous `node:sqlite` commit stalls the event loop for tens of ms. Proved deterministically by file sizes,
// not by timing: with the background checkpointer idle, the WAL grows past SQLite's 1,000-page automatic threshold
// and the database file is untouched (so no commit on this thread checkpointed); one background checkpoint then
// folds everything in and the next commit starts the WAL over.
import { strict as assert } from 'node:assert';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import type { SQLInputValue, StatementSync } from 'node:sqlite';
import { after, test } from 'node:test';
import { KEY_CACHE_MS } from './key-cache.ts';
import { checkLazyGroup, countCalls } from '../../../test/helpers/key-store-sums.ts';
import { LAZY_MS } from './lazy-sums.ts';
import { steppedClock } from '../../../test/helpers/clock.ts';
import { STATES_MAX } from './settlement-queue.ts';
import { SqliteKeyStore } from './sqlite-store.ts';
import { KEY_GONE } from './types.ts';

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

test('sqlite store: a reservation (one statement) refuses at the first counter at its limit, takes nothing, and counts queued settlements first', async () => {
  const store = await SqliteKeyStore.open(join(dir, 'refuse.db'), { everyMs: 3_600_000 });
  try {
    const a = { counter: 'k:a', limit: 25, amount: 10, expiresAt: 0 };
    const b = { counter: 'k:b', limit: 100, amount: 10, expiresAt: 0 };
    assert.equal(store.reserve([a, b]), -1);
    assert.equal(store.reserve([a, b]), -1);
    // a: 20 + a queued +10 = 30 ≥ 25: refused on line 0; b untouched; the settlement is written anyway.
    store.settle([{ counter: 'k:a', amount: 10, expiresAt: 0 }]);
    assert.equal(store.reserve([a, b]), 0);
    assert.deepEqual(await store.values(['k:a', 'k:b']), [30, 20]);
    // The second line refuses: the first (a new counter) is not created.
    assert.equal(store.reserve([{ counter: 'k:new', limit: 1e9, amount: 5, expiresAt: 0 }, { ...b, limit: 20 }]), 1);
    assert.deepEqual(await store.values(['k:new', 'k:b']), [0, 20]);
    // A queued correction below the limit lets the next reservation through: (30 - 15) < 25, then + 10.
    store.settle([{ counter: 'k:a', amount: -15, expiresAt: 0 }]);
    assert.equal(store.reserve([a, b]), -1);
    assert.deepEqual(await store.values(['k:a', 'k:b']), [25, 30]);
    // Exactly at the limit is refused.
    assert.equal(store.reserve([a]), 0);
    // A counter whose window has ended counts as 0 in the check.
    const old = { counter: 'k:old', limit: 10, amount: 10, expiresAt: Date.now() - 1000 };
    assert.equal(store.reserve([old]), -1);
    assert.equal(store.reserve([old]), -1);
    // More queued settlements than one statement carries: written first, then the reservation.
    const many = Array.from({ length: 150 }, (_, i) => ({ counter: `k:many:${i}`, amount: i, expiresAt: 0 }));
    store.settle(many);
    assert.equal(store.reserve([b]), -1);
    assert.deepEqual(await store.values(['k:many:0', 'k:many:149', 'k:b']), [0, 149, 40]);
    // And with a reservation that shares their counters (merged into its rows).
    store.settle([{ counter: 'k:b', amount: 0.25, expiresAt: 0 }, { counter: 'k:other', amount: 0.5, expiresAt: 0 }]);
    assert.equal(store.reserve([b]), -1);
    assert.deepEqual(await store.values(['k:b', 'k:other']), [50.25, 0.5]);
  } finally {
    await store.close();
  }
});

test('sqlite store: a key found through the cache and revoked or rotated by another connection is refused by the next reservation, nothing taken (ADR 0068)', async () => {
  const file = join(dir, 'gone.db');
  const [mine, other] = [await SqliteKeyStore.open(file, { everyMs: 3_600_000 }), await SqliteKeyStore.open(file, { everyMs: 3_600_000 })];
  try {
    const record = { id: 'k1', owner: 'o@example.com', budgets: [], prefix: 'sk-t', createdAt: new Date(0).toISOString(), source: 'api' as const };
    await other.create(record, 'digest-1');
    await other.create({ ...record, id: 'k2' }, 'digest-2');
    const line = { counter: 'k:gone', limit: 1e9, amount: 10, expiresAt: 0 };
    assert.equal(mine.find('digest-1')?.id, 'k1');
    assert.equal(mine.find('digest-2')?.id, 'k2');
    assert.equal(mine.reserve([line], 'digest-1'), -1);
    assert.equal(mine.reserve([], 'digest-2'), -1);
    // Revoked and rotated on the other connection: this one's cache still holds both records...
    assert.equal(await other.revoke('k1', new Date().toISOString()), true);
    assert.equal(await other.rotate('k2', 'digest-2b', 'sk-t', new Date().toISOString()), true);
    assert.equal(mine.find('digest-1')?.id, 'k1', 'served from the cache');
    // ...but the reservation checks the digest in its own statement: KEY_GONE (-2), nothing taken, settlements kept.
    mine.settle([{ counter: 'k:gone', amount: -4, expiresAt: 0 }]);
    assert.equal(mine.reserve([line], 'digest-1'), -2);
    assert.equal(mine.reserve([line], 'digest-2'), -2);
    assert.equal(mine.reserve([], 'digest-2'), -2, 'a request without lines is checked too');
    assert.deepEqual(await mine.values(['k:gone']), [6]);
    assert.equal(mine.find('digest-1'), undefined, 'the gone digest was dropped from the cache');
    assert.equal(mine.find('digest-2b')?.id, 'k2');
    assert.equal(mine.reserve([line], 'digest-2b'), -1);
  } finally {
    await mine.close();
    await other.close();
  }
});

test('sqlite store: a reservation confirms a cached key by the keys version while it is unchanged, and searches the digest once it changed; a version row made again starts above any before it (ADR 0103)', async () => {
  const file = join(dir, 'version-check.db');
  const store = await SqliteKeyStore.open(file, { everyMs: 3_600_000 });
  const raw = new DatabaseSync(file);
  const version = (): number => (raw.prepare(`SELECT value FROM vk_meta WHERE name = 'keys'`).get() as { value: number }).value;
  try {
    await store.create({ id: 'k1', budgets: [], prefix: 'sk-t', createdAt: new Date(0).toISOString(), source: 'api' }, 'digest-1');
    const line = { counter: 'k:vc', limit: 1e9, amount: 1, expiresAt: 0 };
    assert.equal(store.find('digest-1')?.id, 'k1');
    assert.equal(store.reserve([line], 'digest-1'), -1);
    // The key's row removed behind the triggers' back (the version stays): the unchanged version vouches for the
    // digest, so the reservation does not look the digest up (it would find nothing).
    raw.exec(`DROP TRIGGER vk_keys_deleted; DELETE FROM vk_keys WHERE id = 'k1'`);
    assert.equal(store.reserve([line], 'digest-1'), -1, 'version unchanged: confirmed without the digest search');
    // Any change raises the version: now the digest is searched, and it is gone.
    raw.exec(`UPDATE vk_meta SET value = value + 1 WHERE name = 'keys'`);
    assert.equal(store.reserve([line], 'digest-1'), KEY_GONE);
    assert.deepEqual(await store.values(['k:vc']), [2]);
    // A version row removed by hand is made again by the next open, above every version the old row had: a record
    // cached at an old version can never match the new row.
    const before = version();
    raw.exec(`DELETE FROM vk_meta WHERE name = 'keys'`);
    const reopened = await SqliteKeyStore.open(file, { everyMs: 3_600_000 });
    await reopened.close();
    assert.ok(version() > before, `${version()} > ${before}`);
  } finally {
    raw.close();
    await store.close();
  }
});

test('sqlite store: key records stay cached while no key changed, checked about once a second whatever the number of keys; a change by another connection is seen within KEY_CACHE_MS (ADR 0072)', async () => {
  const file = join(dir, 'version.db');
  const [mine, other] = [await SqliteKeyStore.open(file, { everyMs: 3_600_000 }), await SqliteKeyStore.open(file, { everyMs: 3_600_000 })];
  // KEY_CACHE_MS stepped over, not slept out: the cache's age is read from Date.now.
  const clock = steppedClock();
  try {
    // Count the key reads `mine` makes (its one statement that reads vk_keys for a lookup).
    let reads = 0;
    const byDigest = (mine as unknown as { sql: { byDigest: StatementSync } }).sql.byDigest;
    const get = byDigest.get.bind(byDigest);
    Object.defineProperty(byDigest, 'get', { value: (...args: SQLInputValue[]) => (reads++, get(...args)) });
    const record = (i: number) => ({ id: `k${i}`, budgets: [], prefix: 'sk-t', createdAt: new Date(0).toISOString(), source: 'api' as const });
    for (let i = 0; i < 300; i++) await other.create(record(i), `digest-${i}`);
    const findAll = (): void => {
      for (let i = 0; i < 300; i++) if (i !== 5) assert.equal(mine.find(`digest-${i}`)?.id, `k${i}`);
    };
    findAll();
    assert.equal(reads, 299, 'each key read once');
    clock.step(KEY_CACHE_MS + 50);
    reads = 0;
    findAll();
    assert.equal(reads, 1, 'a second later: one read (it finds the keys version unchanged), then every key from the cache');
    await other.create(record(300), 'digest-300');
    findAll();
    assert.equal(reads, 1, 'a key made elsewhere changes no cached record');

    assert.equal(mine.find('digest-5')?.id, 'k5');
    await other.revoke('k5', new Date().toISOString());
    assert.equal(mine.find('digest-5')?.id, 'k5', 'within KEY_CACHE_MS of the last read, served from the cache');
    clock.step(KEY_CACHE_MS + 50);
    assert.equal(mine.find('digest-5'), undefined, 'revoked by the other connection: gone once the version is read again');
    reads = 0;
    findAll();
    assert.equal(reads, 299, 'a changed version forgets every record');
  } finally {
    clock.restore();
    await mine.close();
    await other.close();
  }
});

test('sqlite store: lazy (lifetime) settlements are summed and ride on a reservation once LAZY_MS old (5 s, ADR 0111); a read of counters sees them at once (ADR 0072)', async () => {
  const file = join(dir, 'lazy.db');
  const [mine, other] = [await SqliteKeyStore.open(file, { everyMs: 3_600_000 }), await SqliteKeyStore.open(file, { everyMs: 3_600_000 })];
  const clock = steppedClock();
  try {
    const life = { counter: 'k:a:tokens:total:all', amount: 16, expiresAt: 0, lazy: true };
    for (let i = 0; i < 20; i++) {
      assert.equal(mine.reserve(lines), -1);
      mine.settle([...deltas, life]);
    }
    assert.equal(mine.reserve(lines), -1);
    assert.deepEqual(await other.values([lines[0]!.counter, life.counter]), [21 * 10 - 20 * 4, 0], 'settlements rode on the reservations; the lifetime sum is held');
    // LAZY_MS stepped over, not slept out: the sums' age is read from Date.now.
    clock.step(LAZY_MS + 20);
    assert.equal(mine.reserve(lines), -1);
    assert.deepEqual(await other.values([life.counter]), [20 * 16], 'LAZY_MS old: written once, summed, with the next reservation');
    mine.settle([{ ...life, amount: 5 }]);
    assert.deepEqual(await mine.values([life.counter]), [20 * 16 + 5], 'the store\'s own read writes what it holds first');
  } finally {
    clock.restore();
    await mine.close();
    await other.close();
  }
});

test('sqlite store: reservations carrying any number of queued settlements use a bounded set of prepared statements, padded rows change nothing', async () => {
  const store = await SqliteKeyStore.open(join(dir, 'sizes.db'), { everyMs: 3_600_000 });
  const prepared = (): number => {
    const s = (store as unknown as { sql: { reserveMany: unknown[]; reserveChecked: unknown[] } }).sql;
    return s.reserveMany.filter(Boolean).length + s.reserveChecked.filter(Boolean).length;
  };
  try {
    // As under load with many keys: each reservation carries a different number of other keys' settlements.
    const other = (i: number): string => `k:other-${i}:usd:month:x`;
    let expected = 0;
    for (let n = 0; n <= 250; n++) {
      store.settle(Array.from({ length: n }, (_, i) => ({ counter: other(i), amount: 1, expiresAt: 0 })));
      expected += n;
      assert.equal(store.reserve(lines), -1);
    }
    // Settlements alone (flush) in a padded statement too: 20 rows.
    store.settle(Array.from({ length: 20 }, (_, i) => ({ counter: other(i), amount: 1, expiresAt: 0 })));
    store.flush();
    expected += 20;
    assert.ok(prepared() <= 28, `${prepared()} statements prepared for 6 to 256 rows`);
    const values = await store.values(Array.from({ length: 250 }, (_, i) => other(i)));
    assert.equal(values.reduce((a, b) => a + b, 0), expected, 'every settlement written once, padding rows nothing');
    assert.deepEqual(await store.values([lines[0]!.counter]), [251 * 10]);
    // A refusal through a padded statement still names its line and takes nothing.
    const capped = [...lines.slice(0, 5), { ...lines[5]!, limit: 251 * 10 }];
    store.settle(Array.from({ length: 13 }, (_, i) => ({ counter: other(i), amount: 1, expiresAt: 0 })));
    assert.equal(store.reserve(capped), 5);
    assert.deepEqual(await store.values([lines[0]!.counter, other(0)]), [251 * 10, 252], 'nothing taken; the queued settlements written alone');
  } finally {
    await store.close();
  }
});

test('sqlite store: with group commit the reservations of one event-loop turn after the first (all of them while the store is busy) share one transaction, each checked on its own; one WAL frame for a page they all touch (ADR 0090)', async () => {
  const file = join(dir, 'group.db');
  const [mine, other] = [await SqliteKeyStore.open(file, { everyMs: 3_600_000 }, { group: true }), await SqliteKeyStore.open(file, { everyMs: 3_600_000 })];
  try {
    // 10 reservations in one turn against a budget of 45 taking 10 each: the first at once, the rest grouped; the
    // budget passes while anything is left (0, 10, 20, 30, 40), so 5 pass and it ends at 50: one estimate over.
    const line = { counter: 'k:g:usd:month:x', limit: 45, amount: 10, expiresAt: 0 };
    const other6 = lines.map((l) => ({ ...l, counter: `${l.counter}:g` }));
    // The rows exist first (creating them writes the table's page and the name index's: 2 frames).
    assert.equal(mine.reserve([line, ...other6].map((l) => ({ ...l, amount: 0 }))), -1);
    await new Promise((r) => setImmediate(r));
    await mine.checkpoint();
    const answers = Array.from({ length: 10 }, () => mine.reserve([line, ...other6]));
    assert.equal(typeof answers[0], 'number', 'the first of the turn answers at once');
    assert.ok(answers.slice(1).every((a) => a instanceof Promise), 'the others wait for the turn\'s commit');
    const refused = await Promise.all(answers);
    assert.deepEqual(refused, [-1, -1, -1, -1, -1, 0, 0, 0, 0, 0]);
    assert.deepEqual(await other.values([line.counter, other6[0]!.counter]), [50, 50], 'each refusal took nothing, the group committed');
    // Two commits (the first alone, then the group), each of the one page all counters share: 2 frames, not 10.
    assert.equal((await mine.checkpoint())!.log, 2);
    // A key revoked by another connection is refused inside a group; the others of the group are not.
    await other.create({ id: 'gk', budgets: [], prefix: 'sk', createdAt: '', source: 'api' }, 'digest-gk');
    await other.create({ id: 'gk2', budgets: [], prefix: 'sk', createdAt: '', source: 'api' }, 'digest-gk2');
    await new Promise((r) => setImmediate(r));
    const free = { counter: 'k:free:usd:month:x', limit: 1e9, amount: 1, expiresAt: 0 };
    // While busy (the last turn with reservations had several), the first of a turn is grouped too.
    const first = mine.reserve([free], 'digest-gk');
    assert.ok(first instanceof Promise, 'after a turn that grouped, the next turn\'s first waits too');
    assert.equal(await first, -1);
    await other.revoke('gk', new Date().toISOString());
    const group = [mine.reserve([free], 'digest-gk'), mine.reserve([free], 'digest-gk2'), mine.reserve([free])];
    assert.equal(typeof group[0], 'number', 'after a turn with one reservation, the first answers at once again');
    assert.deepEqual(await Promise.all(group), [KEY_GONE, -1, -1]);
    assert.deepEqual(await other.values([free.counter]), [3]);
  } finally {
    await mine.close();
    await other.close();
  }
});

test("sqlite store (ADR 0103): a reservation and its settlement find their lines' states through the first line's state, and through the queue's Map after a trim dropped them; a due settlement merges into its line's row", async () => {
  const store = await SqliteKeyStore.open(join(dir, 'group.db'), { everyMs: 3_600_000 });
  try {
    const line = (counter: string, amount = 10) => ({ counter, limit: 1e9, amount, expiresAt: 0 });
    const delta = (counter: string, amount: number) => ({ counter, amount, expiresAt: 0 });
    const states = (store as unknown as { pending: { states: Map<string, unknown> } }).pending.states;
    const lookups = countCalls(states, 'get');
    assert.equal(store.reserve([line('k:a'), line('k:b'), line('k:c')]), -1);
    assert.equal(lookups.n, 3, 'one lookup per line the first time');
    store.settle([delta('k:a', -1), delta('k:b', -1), delta('k:c', -1)]);
    assert.equal(lookups.n, 4, 'one lookup for the settlement of the three lines');
    const before = lookups.n;
    // The held refunds are claimed by the next reservation of their counters and merged into their rows.
    assert.equal(store.reserve([line('k:a'), line('k:b'), line('k:c')]), -1);
    assert.equal(lookups.n - before, 1, "the next reservation of the same lines: one lookup, the others from the first line's group");
    assert.deepEqual(await store.values(['k:a', 'k:b', 'k:c']), [19, 19, 19]);
    // k:a's refund held, then STATES_MAX counters: the next reservation's trim drops k:b's and k:c's idle states, and
    // k:b gets a new one. The settlement below must not add to the dropped ones.
    store.settle([delta('k:a', -1)]);
    for (let at = 0; at < STATES_MAX; at += 100) store.reserve(Array.from({ length: 100 }, (_, i) => line(`k:fill${at + i}`, 0)));
    assert.equal(store.reserve([line('k:b', 0)]), -1);
    store.settle([delta('k:a', -1), delta('k:b', -2), delta('k:c', -3)]);
    store.settle([delta('k:b', -5)]);
    assert.deepEqual(await store.values(['k:a', 'k:b', 'k:c']), [17, 12, 16]);
    // The same for a reservation: k:a held again, a trim, k:c made anew with a charge due; the lines must land on the
    // live states (a dropped one would leave k:c's charge out of its row, or name k:c twice in the statement).
    store.settle([delta('k:a', -1)]);
    for (let at = 0; at < STATES_MAX; at += 100) store.reserve(Array.from({ length: 100 }, (_, i) => line(`k:fill${at + i}`, 0)));
    assert.equal(store.reserve([line('k:c', 0)]), -1);
    store.settle([delta('k:c', 1)]);
    assert.equal(store.reserve([line('k:a'), line('k:b'), line('k:c')]), -1);
    assert.deepEqual(await store.values(['k:a', 'k:b', 'k:c']), [26, 22, 27]);
  } finally {
    await store.close();
  }
});

test("sqlite store (ADR 0103, 0107): a settlement's lifetime sums are found through their memos, also when keys share their first line; right after LazySums dropped entries", async () => {
  const store = await SqliteKeyStore.open(join(dir, 'lazygroup.db'), { everyMs: 3_600_000 });
  try {
    await checkLazyGroup(store);
  } finally {
    await store.close();
  }
});
