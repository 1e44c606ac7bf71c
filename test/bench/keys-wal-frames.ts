// WAL frames and CPU per request of the SQLite store in this process (docs/perf.md "Virtual keys, SQLite with 1,000
// keys, session 11"): one key against KEYS (default 1,000) keys in TEAMS (100) teams used in turn, each request
// finding its key, reserving its key's, team's and organisation's USD and token lines, and settling (with its two
// lifetime counters) once C later requests have reserved (answers in flight, as at c=C). Frames are counted by the
// checkpoint after each round (the background checkpointer is idle), so they do not depend on the machine's load.
//   node test/bench/keys-wal-frames.ts [rounds=4] [requests per round=4000] [in flight=50]
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteKeyStore } from '../../plugins/lib/key-store/sqlite-store.ts';
import { digestOf } from '../../plugins/lib/key-store/secrets.ts';
import type { CounterDelta, CounterLine } from '../../plugins/lib/key-store/types.ts';

/** KEYS_GROUP=<n>: n reservations share one write transaction (a group commit; measured only, not what the store does). */
const GROUP = Number(process.env.KEYS_GROUP ?? 1);
const [ROUNDS, N, C] = [4, 4000, 50].map((d, i) => Number(process.argv[2 + i] ?? d));
const work = mkdtempSync(join(tmpdir(), 'walf-'));
const secret = (i: number): string => `sk-bench-${String(i).padStart(4, '0')}-0123456789abcdef`;
async function make(keys: number) {
  const path = join(work, `k${keys}.db`);
  const store = await SqliteKeyStore.open(path, { everyMs: 3_600_000, quietMs: 3_600_000, busyFrames: 1e9, restartFrames: 1e9 });
  for (let i = 0; i < keys; i++) await store.create({ id: `key-${i}`, team: `team-${i % Math.min(keys, Number(process.env.TEAMS ?? 100))}`, budgets: [], prefix: 'sk', createdAt: '', source: 'api' }, digestOf(secret(i)));
  return { keys, path, store, seq: 0, inflight: [] as CounterDelta[][], cpu: [] as number[], sys: [] as number[], frames: [] as number[] };
}
type S = Awaited<ReturnType<typeof make>>;
const exp = Date.now() + 86_400_000 * 40;
function oneReq(s: S): void {
  const i = s.seq++ % s.keys;
  const team = i % Math.min(s.keys, Number(process.env.TEAMS ?? 100));
  const digest = digestOf(secret(i));
  s.store.find(digest);
  const lines: CounterLine[] = [
    { counter: `k:key-${i}:usd:month:2026-11`, amount: 0.001, limit: 1e9, expiresAt: exp },
    { counter: `k:key-${i}:tokens:day:2026-11-26`, amount: 300, limit: 1e12, expiresAt: exp },
    { counter: `t:team-${team}:usd:month:2026-11`, amount: 0.001, limit: 1e9, expiresAt: exp },
    { counter: `t:team-${team}:tokens:day:2026-11-26`, amount: 300, limit: 1e12, expiresAt: exp },
    { counter: `g:usd:month:2026-11`, amount: 0.001, limit: 1e9, expiresAt: exp },
    { counter: `g:tokens:day:2026-11-26`, amount: 300, limit: 1e12, expiresAt: exp },
  ];
  if (s.store.reserve(lines, digest) !== -1) throw new Error('refused');
  s.inflight.push([...lines.map((l) => ({ counter: l.counter, amount: -l.amount / 2, expiresAt: l.expiresAt })), { counter: `k:key-${i}:tokens:total:all`, amount: 150, expiresAt: 0, lazy: true }, { counter: `k:key-${i}:usd:total:all`, amount: 0.0005, expiresAt: 0, lazy: true }]);
  // Answers land in bursts: settle whatever is older than C requests.
  while (s.inflight.length > C) s.store.settle(s.inflight.shift()!);
}
const walFrames = (p: string): number => { try { return Math.max(0, (statSync(p + '-wal').size - 32) / 4120); } catch { return 0; } };
const stores = [await make(1), await make(Number(process.env.KEYS ?? 1000))];
for (const s of stores) for (let k = 0; k < 2000; k++) oneReq(s);
for (let r = 0; r < ROUNDS; r++) {
  for (const s of r % 2 ? [...stores].reverse() : stores) {
    await s.store.checkpoint();
    const c0 = process.cpuUsage();
    const db = (s.store as unknown as { db: { exec(sql: string): void } }).db;
    for (let k = 0; k < N; k++) {
      if (GROUP > 1 && k % GROUP === 0) db.exec('BEGIN IMMEDIATE');
      oneReq(s);
      if (GROUP > 1 && (k % GROUP === GROUP - 1 || k === N - 1)) db.exec('COMMIT');
      if (k % 64 === 63) await new Promise((res) => setImmediate(res));
    }
    const c = process.cpuUsage(c0);
    s.cpu.push((c.user + c.system) / N);
    s.sys.push(c.system / N);
    s.frames.push(((await s.store.checkpoint())?.log ?? 0) / N);
  }
}
for (const s of stores) {
  console.log(`${s.keys} keys: CPU µs/req ${s.cpu.map((x) => x.toFixed(0)).join(', ')} (sys ${s.sys.map((x) => x.toFixed(0)).join(', ')}); WAL frames/req ${s.frames.map((x) => x.toFixed(2)).join(', ')}`);
  await s.store.close();
}
rmSync(work, { recursive: true, force: true });
