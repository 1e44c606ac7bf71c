// What a key store adds to an LLM request, isolated from HTTP (issue 13 "Targets": ≤ 150 µs p50 on the embedded
// store, ≤ 1 ms on the shared one). In this process, C concurrent request flows each do what the `virtualKeys`
// policy does around an upstream call: find the key by its digest (on a shared store, from its cache: ADR 0061),
// reserve 6 counter lines (key, team, organisation × a USD and a token budget; the shared store confirms the key in
// the same round trip), wait for the "upstream" (a 1 ms timer), settle 6 deltas. Per request, the wall time of
// the three store calls (awaited, so a shared store's round trips and the event loop's queue under concurrency
// count) gives the added latency; process CPU per request, minus a no-op store's, gives the store's CPU (and the
// share of it on the event loop's thread: the rest is the SQLite checkpointer thread, GC helpers, libuv). Stores are
// interleaved round by round; KEYS_BASELINE=<another checkout> adds its stores as more rows (an A/B in one process).
//
//   node test/bench/keys-store-cost.ts [rounds=5] [requests per round=2000] [concurrency=8]
//
// SQLite always; Redis when `redis-server` is installed; PostgreSQL when its server binaries are (started here).
// KEYS_STORES=sqlite,redis (a comma list) keeps only those. KEYS_IN_TURN=1000: the requests use that many keys in
// turn (and their teams), as the gateway's 1,000-key row does, instead of one key.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { pathToFileURL } from 'node:url';
import { waitForPort } from '../helpers/processes.ts';
import { freePort } from '../helpers/ports.ts';
import { locatePostgres, startPostgres } from '../helpers/postgres.ts';
import { which } from '../helpers/which.ts';
import type { CounterDelta, CounterLine, KeyStore } from '../../plugins/lib/key-store/types.ts';
import { digestOf } from '../../plugins/lib/key-store/secrets.ts';

const rounds = Number(process.argv[2] ?? 5);
const perRound = Number(process.argv[3] ?? 2000);
const concurrency = Number(process.argv[4] ?? 8);
const KEYS = 1000;
const TEAMS = 100;
const secret = (i: number): string => `sk-bench-${String(i).padStart(4, '0')}-0123456789abcdef`;

type Open = (spec: Record<string, unknown>, cwd: string) => Promise<KeyStore>;
interface Row {
  readonly name: string;
  readonly store: KeyStore | undefined;
  readonly added: number[];
  readonly cpu: number[];
  readonly thread: number[];
  errors: number;
  firstError?: string;
}

async function opener(root: string): Promise<Open> {
  const mod = (await import(pathToFileURL(join(root, 'plugins/lib/key-store/open-store.ts')).href)) as { openStore: Open };
  return mod.openStore;
}

/** 1,000 keys in 100 teams; the one used is the 500th. */
async function seed(store: KeyStore): Promise<void> {
  for (let i = 0; i < KEYS; i++) {
    await store.create({ id: `key-${i}`, team: `team-${i % TEAMS}`, budgets: [], prefix: 'sk-bench', createdAt: new Date(0).toISOString(), source: 'api' }, digestOf(secret(i)));
  }
}

const noop: KeyStore = {
  kind: 'none',
  find: () => ({ id: 'key-500', budgets: [], prefix: '', createdAt: '', source: 'api' }),
  reserve: () => -1,
  settle: () => undefined,
  values: async () => [],
  create: async () => undefined,
  get: async () => undefined,
  list: async () => [],
  rotate: async () => false,
  revoke: async () => false,
  close: () => undefined,
};

// KEYS_IN_TURN=n: requests use keys 500, 501, … in turn (n of them, their teams in turn), as the gateway's 1,000-key
// row does; without it, key 500 alone.
const inTurn = Math.max(1, Math.min(KEYS, Number(process.env.KEYS_IN_TURN ?? 1)));
// Windowed counters expire a day after their window, as the policy's do (so Redis sets their expiry on every write).
const expiresAt = (counter: string): number => Date.now() + (counter.includes(':month:') ? 32 : 2) * 86_400_000;
const flows = Array.from({ length: inTurn }, (_, n) => {
  const k = (500 + n) % KEYS;
  const names = [`k:key-${k}`, `t:team-${k % TEAMS}`, 'g'].flatMap((scope) => [`${scope}:usd:month:2026-11`, `${scope}:tokens:day:2026-11-26`]);
  return {
    digest: digestOf(secret(k)),
    lines: names.map((counter): CounterLine => ({ counter, limit: 1e15, amount: 0.001, expiresAt: expiresAt(counter) })),
    deltas: names.map((counter): CounterDelta => ({ counter, amount: -0.0004, expiresAt: expiresAt(counter) })),
  };
});
let turn = 0;

/** One round: `perRound` requests by `concurrency` flows; per-request added µs, and CPU µs per request. */
async function round(store: KeyStore): Promise<{ added: number[]; cpuUs: number; threadUs: number; errors: number; firstError?: string }> {
  const added: number[] = [];
  let errors = 0;
  let firstError: string | undefined;
  let left = perRound;
  const c0 = process.cpuUsage();
  const t0 = process.threadCpuUsage();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (left-- > 0) {
        const { digest, lines, deltas } = flows[turn++ % inTurn]!;
        try {
          const t0 = performance.now();
          const found = store.find(digest);
          if (!(found instanceof Promise ? await found : found)) throw new Error('key not found');
          // With the digest, as the policy does: a shared store confirms its cached key in the same round trip.
          const reserved = store.reserve(lines, digest);
          if ((reserved instanceof Promise ? await reserved : reserved) !== -1) throw new Error('refused');
          const t1 = performance.now();
          await sleep(1);
          const t2 = performance.now();
          const settled = store.settle(deltas);
          if (settled instanceof Promise) await settled;
          added.push((t1 - t0 + performance.now() - t2) * 1000);
        } catch (err) {
          errors++;
          firstError ??= (err as Error).message;
        }
      }
    }),
  );
  const t = process.threadCpuUsage(t0);
  const c = process.cpuUsage(c0);
  return { added, cpuUs: (c.user + c.system) / perRound, threadUs: (t.user + t.system) / perRound, errors, firstError };
}

const quantile = (xs: number[], q: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
};
const median = (xs: number[]): number => quantile(xs, 0.5);
const fmt = (x: number): string => x.toFixed(0);

const work = mkdtempSync(join(tmpdir(), 'swy-keys-cost-'));
const stops: (() => Promise<void>)[] = [];
const rows: Row[] = [{ name: 'no store (the flow alone)', store: noop, added: [], cpu: [], thread: [], errors: 0 }];
try {
  const roots: [string, string][] = [['', resolve(import.meta.dirname, '../..')]];
  if (process.env.KEYS_BASELINE) roots.push([' (baseline)', resolve(process.env.KEYS_BASELINE)]);
  const specs: [string, Record<string, unknown>][] = [];
  const wanted = (kind: string): boolean => !process.env.KEYS_STORES || process.env.KEYS_STORES.split(',').includes(kind);
  if (wanted('sqlite')) specs.push(['sqlite', { sqlite: { path: join(work, 'keys.db') } }]);
  const redisBin = wanted('redis') ? which('redis-server', ['/usr/bin', '/usr/sbin', '/usr/local/bin']) : undefined;
  if (redisBin) {
    const port = await freePort();
    const redis = spawn(redisBin, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', work], { stdio: 'ignore' });
    stops.push(async () => {
      redis.kill('SIGTERM');
      await new Promise((r) => redis.once('exit', r));
    });
    await waitForPort(port, Date.now() + 10_000);
    specs.push(['redis', { redis: { url: `redis://127.0.0.1:${port}` } }]);
  }
  const pgFound = wanted('postgres') ? locatePostgres() : { skip: 'not asked for' };
  if (!('skip' in pgFound)) {
    const pg = await startPostgres(pgFound);
    stops.push(() => pg.stop());
    specs.push(['postgres', { postgres: { url: pg.url } }]);
  }
  for (const [suffix, root] of roots) {
    const open = await opener(root);
    for (const [kind, spec] of specs) {
      // Each row its own file, key prefix or tables.
      const tag = `${kind}${suffix ? '_base' : ''}`;
      const own = kind === 'sqlite' ? { sqlite: { path: join(work, `${tag}.db`) } } : kind === 'redis' ? { redis: { ...(spec.redis as object), prefix: `${tag}:` } } : { postgres: { ...(spec.postgres as object), tablePrefix: `${tag}_` } };
      const store = await open(own, work);
      await seed(store);
      rows.push({ name: `${kind}${suffix}`, store, added: [], cpu: [], thread: [], errors: 0 });
    }
  }
  for (const r of rows) await round(r.store!);
  for (let i = 0; i < rounds; i++) {
    for (const r of rows) {
      const m = await round(r.store!);
      r.added.push(...m.added);
      r.cpu.push(m.cpuUs);
      r.thread.push(m.threadUs);
      r.errors += m.errors;
      r.firstError ??= m.firstError;
    }
  }
  const base = median(rows[0]!.cpu);
  const baseThread = median(rows[0]!.thread);
  console.log(`\n${rounds} interleaved rounds × ${perRound} requests, ${concurrency} concurrent, ${inTurn} key(s) in turn; find + reserve 6 lines + settle 6 deltas per request\n`);
  console.log('| store | added p50 µs | added p90 µs | added p99 µs | CPU µs/request, per round | store CPU µs/request (median − no store) | of it, this thread |');
  console.log('|---|---:|---:|---:|---|---:|---:|');
  for (const r of rows) {
    const cpu = median(r.cpu);
    if (r.errors) console.log(`(${r.name}: ${r.errors} failed requests, first: ${r.firstError})`);
    console.log(`| ${r.name} | ${fmt(median(r.added))} | ${fmt(quantile(r.added, 0.9))} | ${fmt(quantile(r.added, 0.99))} | ${r.cpu.map(fmt).join(', ')} | ${r === rows[0] ? '—' : fmt(cpu - base)} | ${r === rows[0] ? '—' : fmt(median(r.thread) - baseThread)} |`);
  }
} finally {
  for (const r of rows.slice(1)) await r.store?.close();
  for (const stop of stops) await stop();
  await sleep(50);
  rmSync(work, { recursive: true, force: true });
}
