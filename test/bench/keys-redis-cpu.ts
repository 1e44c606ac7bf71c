// Redis's own CPU for the key store's serving path, 1 key against 1,000 keys in turn (docs/perf.md "Virtual keys,
// Redis with 1,000 keys, session 11"). In this process, C concurrent request flows do what the `virtualKeys` policy
// does around an upstream call, against a redis-server started here: find the key (cached), reserve 6 lines (key,
// team, organisation × USD month and tokens day), wait 1 ms, settle the real usage (the 6 lines' deltas and the key's
// two lifetime counters, lazy, as reservation.ts does). Rows (1 key; KEYS_IN_TURN keys of 100 teams in turn; the
// same from KEYS_BASELINE=<checkout> with its own prefix) are interleaved round by round. Per row: redis-server's CPU
// µs per request (/proc), this process's CPU µs per request, Redis commands per request (INFO commandstats, the
// scripts' inner commands included) and bytes Redis read per request (INFO stats).
// KEYS_SHAPE=team: keys.ts's `team` shape (keys-flows.ts: one team line per request, the refund and the 2 lifetime sums).
//
//   node test/bench/keys-redis-cpu.ts [rounds=5] [requests per round=3000] [concurrency=50]
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { pathToFileURL } from 'node:url';
import { waitForPort } from '../helpers/processes.ts';
import { freePort } from '../helpers/ports.ts';
import { which } from '../helpers/which.ts';
import type { KeyStore } from '../../plugins/lib/key-store/types.ts';
import { digestOf } from '../../plugins/lib/key-store/secrets.ts';
import { benchSecret, benchShape, keyFlow, TEAMS } from './keys-flows.ts';
import { RespClient } from '../../plugins/lib/key-store/resp.ts';

const rounds = Number(process.argv[2] ?? 5);
const perRound = Number(process.argv[3] ?? 3000);
const concurrency = Number(process.argv[4] ?? 50);
const KEYS = Number(process.env.KEYS_IN_TURN ?? 1000);
const secret = benchSecret;

const bin = which('redis-server', ['/usr/bin', '/usr/sbin', '/usr/local/bin']);
if (!bin) throw new Error('redis-server is not installed');
const work = mkdtempSync(join(tmpdir(), 'swy-keys-redis-cpu-'));
const port = await freePort();
const redis = spawn(bin, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', work], { stdio: 'ignore' });
await waitForPort(port, Date.now() + 10_000);
const url = `redis://127.0.0.1:${port}`;
const admin = new RespClient(url);
/** A process's CPU time in µs, all its threads: the scheduler's nanosecond count (/proc/<pid>/task/<tid>/schedstat), not /proc's 10 ms ticks. */
const cpuOf = (pid: number): number => {
  let ns = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
  return ns / 1000;
};
/** Read and write system calls of a process so far (/proc/<pid>/io): socket reads and writes are most of them here. */
const syscalls = (pid: number | 'self'): { r: number; w: number } => {
  const text = readFileSync(`/proc/${pid}/io`, 'utf8');
  return { r: Number(/syscr: (\d+)/.exec(text)?.[1] ?? 0), w: Number(/syscw: (\d+)/.exec(text)?.[1] ?? 0) };
};
const info = async (): Promise<{ calls: Map<string, number>; usec: Map<string, number>; bytes: number; out: number }> => {
  const text = String(await admin.command('INFO', 'all'));
  const calls = new Map<string, number>();
  const usec = new Map<string, number>();
  for (const m of text.matchAll(/^cmdstat_(\w+):calls=(\d+),usec=(\d+)/gm)) {
    calls.set(m[1]!, Number(m[2]));
    usec.set(m[1]!, Number(m[3]));
  }
  const num = (re: RegExp): number => Number(re.exec(text)?.[1] ?? 0);
  return { calls, usec, bytes: num(/total_net_input_bytes:(\d+)/), out: num(/total_net_output_bytes:(\d+)/) };
};

const flow = (k: number): ReturnType<typeof keyFlow> => keyFlow(k, benchShape);

interface Row { name: string; store: KeyStore; flows: ReturnType<typeof flow>[]; turn: number; redis: number[]; own: number[]; calls: Map<string, number>; usec: Map<string, number>; bytes: number; out: number; sys: number[]; n: number }

async function open(root: string, prefix: string): Promise<KeyStore> {
  const { openStore } = (await import(pathToFileURL(join(root, 'plugins/lib/key-store/open-store.ts')).href)) as { openStore: (s: unknown, cwd: string) => Promise<KeyStore> };
  const store = await openStore({ redis: { url, prefix } }, work);
  for (let i = 0; i < KEYS; i++) await store.create({ id: `key-${i}`, team: `team-${i % TEAMS}`, budgets: [], prefix: 'sk-bench', createdAt: new Date(0).toISOString(), source: 'api' }, digestOf(secret(i)));
  return store;
}

async function round(row: Row, n: number): Promise<void> {
  let left = n;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (left-- > 0) {
      const f = row.flows[row.turn++ % row.flows.length]!;
      const found = row.store.find(f.digest);
      if (!(found instanceof Promise ? await found : found)) throw new Error('key not found');
      const r = row.store.reserve(f.lines, f.digest);
      if ((r instanceof Promise ? await r : r) !== -1) throw new Error('refused');
      await sleep(1);
      row.store.settle(f.deltas);
    }
  }));
}

const roots: [string, string][] = [['', resolve(import.meta.dirname, '../..')]];
if (process.env.KEYS_BASELINE) roots.push([' (baseline)', resolve(process.env.KEYS_BASELINE)]);
const rows: Row[] = [];
for (const [tag, root] of roots) {
  const p = tag ? 'b' : 'n';
  rows.push({ name: `1 key${tag}`, store: await open(root, `${p}1:`), flows: [flow(500)], turn: 0, redis: [], own: [], calls: new Map(), usec: new Map(), bytes: 0, out: 0, sys: [0, 0, 0, 0], n: 0 });
  rows.push({ name: `${KEYS} keys in turn${tag}`, store: await open(root, `${p}k:`), flows: Array.from({ length: KEYS }, (_, i) => flow(i)), turn: 0, redis: [], own: [], calls: new Map(), usec: new Map(), bytes: 0, out: 0, sys: [0, 0, 0, 0], n: 0 });
}
for (const row of rows) {
  await round(row, 1000);
  await row.store.values([]);
}
for (let r = 0; r < rounds; r++) {
  for (const row of r % 2 ? [...rows].reverse() : rows) {
    await sleep(1500); // the previous row's lazy sums and timers settle first
    const i0 = await info();
    const r0 = cpuOf(redis.pid!);
    const s0 = [syscalls('self'), syscalls(redis.pid!)];
    const c0 = process.cpuUsage();
    await round(row, perRound);
    const c = process.cpuUsage(c0);
    const s1 = [syscalls('self'), syscalls(redis.pid!)];
    [s1[0]!.r - s0[0]!.r, s1[0]!.w - s0[0]!.w, s1[1]!.r - s0[1]!.r, s1[1]!.w - s0[1]!.w].forEach((v, i) => (row.sys[i]! += v));
    row.redis.push((cpuOf(redis.pid!) - r0) / perRound);
    row.own.push((c.user + c.system) / perRound);
    const i1 = await info();
    for (const [k, v] of i1.calls) if (k !== 'info') row.calls.set(k, (row.calls.get(k) ?? 0) + v - (i0.calls.get(k) ?? 0));
    for (const [k, v] of i1.usec) if (k !== 'info') row.usec.set(k, (row.usec.get(k) ?? 0) + v - (i0.usec.get(k) ?? 0));
    row.bytes += i1.bytes - i0.bytes;
    row.out += i1.out - i0.out;
    row.n += perRound;
    // What the row's store still holds (lifetime sums, held refunds: ADR 0091, 0097) is written now, outside the
    // measure (after the warm-up too): its idle timers would otherwise write it during the next row's round.
    await row.store.values([]);
  }
}
const med = (a: number[]): number => [...a].sort((x, y) => x - y)[a.length >> 1]!;
console.log(`${rounds} × ${perRound} at c=${concurrency}\n| row | redis-server CPU µs/req (rounds) | median | this process CPU µs/req (rounds) | median | commands/req (µs per call, INFO commandstats: a script's includes its commands') | bytes read/req | bytes written/req | read, write calls/req: this process; redis-server |\n|---|---|---:|---|---:|---|---:|---:|---|`);
for (const row of rows) {
  const calls = [...row.calls].filter(([, v]) => v > 0).map(([k, v]) => `${k} ${(v / row.n).toFixed(2)} (${((row.usec.get(k) ?? 0) / v).toFixed(2)})`).join(', ');
  console.log(`| ${row.name} | ${row.redis.map((x) => x.toFixed(1)).join(', ')} | ${med(row.redis).toFixed(1)} | ${row.own.map((x) => x.toFixed(0)).join(', ')} | ${med(row.own).toFixed(1)} | ${calls} | ${(row.bytes / row.n).toFixed(0)} | ${(row.out / row.n).toFixed(0)} | ${row.sys.map((v) => (v / row.n).toFixed(3)).join(', ')} |`);
}
for (const row of rows) await row.store.close();
admin.close();
redis.kill('SIGTERM');
await new Promise((r) => redis.once('exit', r));
rmSync(work, { recursive: true, force: true });
