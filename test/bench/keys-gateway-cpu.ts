// The keyed route's cost in the gateway process, A/B (docs/perf.md "Keyed route cost, session 7b"): gateways with the
// plain `ai` route and with `virtualKeys` on SQLite (1 key, or KEYS keys used in turn), optionally the same from a
// baseline checkout (KEYS_BASELINE=<dir>), rounds interleaved; per round the gateway's process CPU per request (from
// /proc, c=CONC) and the c=1 p50. KEYS_PROF=<dir> starts the gateways with --cpu-prof, a directory each under it
// (sampling every KEYS_PROF_INTERVAL µs, default 1000): Node's default names, one file per thread (the SQLite
// checkpointer's worker writes its own; one fixed name let the threads overwrite each other's profile).
// KEYS_STORE=redis: the keyed gateways on a redis-server started on a free port (a prefix each) instead of SQLite; the
// Redis commands each gateway's requests caused are printed per request (INFO commandstats: key reads, scripts), with
// redis-server's own CPU (/proc) and the bytes it read (INFO stats) per request. KEYS_ONE=1 with keys > 1: a keyed
// gateway with one key beside the one with KEYS keys in turn (1 key against 1,000 in the same interleaved rounds).
// KEYS_MEMORY=1: the SQLite store in memory (`:memory:`: no file, no WAL, no checkpointer) and the keys declared in
// the config (a memory store is the gateway's own): what the counters cost without the file's I/O. Every run prints
// each gateway's I/O system calls per request (/proc/<pid>/io: bytes read and written, read and write calls; the
// SQLite WAL's frames, 4 KiB and a 24-byte header in two writes each, are in them).
// KEYS_GC=1: the gateways run with --trace-gc-nvp, stdout to a file each; per gateway, over its c=CONC phases only
// (the file's bytes written during them): scavenges, bytes promoted and allocated per request, mark-compacts and
// their pause time, and the old generation's growth between GCs (promoted plus allocated there directly: what
// per-key state held across scavenges costs: docs/perf.md "Session 13, keyturn").
// KEYS_NODE_ARGS="<flags>": more Node flags for every gateway (e.g. `--import <abs>/test/bench/heap-sample.ts`).
// Every run prints each CPU's busy share during each gateway's c=CONC phases (/proc/stat): with KEYS_PIN, whether CPU 1
// (load generator, upstream, redis-server) is saturated.
// KEYS_CALLGRIND=1: every gateway under valgrind's callgrind (KEYS_CACHE_SIM=1: with its cache simulation), counting
// only during the c=CONC phases: instructions (and simulated cache misses) per request, which the machine's load does
// not move. Use the requests mode (no KEYS_LOAD_S) and small counts: a gateway runs some 50 times slower.
// KEYS_ONE_TEAM=1 with keys > 1: a keyed gateway whose keys are all in one team beside the one with 100 teams (what
// many keys cost apart from many team counters).
// KEYS_SHAPE=team: keys.ts's `team` shape (keys without budgets, one USD budget per team, no organisation budget).
// KEYS_PIN=1: placed as `BENCH_ONLY=keys` places them (test/bench/run.ts): every gateway on CPU 0 (all its threads:
// V8's GC helpers and the SQLite checkpointer's worker share the serving thread's core, so their CPU is the serving
// thread's lost time), this process (load generator and upstream) on CPU 1. Unpinned, those threads run beside the
// main thread on the other core.
// KEYS_LOAD_S=<seconds>: each c=CONC phase is that many seconds of autocannon (test/bench/load.ts, its own process,
// as `BENCH_ONLY=keys` drives the gateways) instead of `requests` through node:http from this process, which could
// not keep a pinned gateway busy; per-request figures divide by the requests autocannon completed.
// Usage: node test/bench/keys-gateway-cpu.ts [rounds=4] [requests=2000] [conc=8] [keys=1]
import { execFileSync, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync, mkdtempSync } from 'node:fs';
import { createServer, request as httpRequest, Agent } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { stringify } from 'yaml';
import { NODE_ENV_DEFAULTS, NODE_FLAGS } from '../../bin/node-flags.js';
import { freePort } from '../helpers/ports.ts';
import { chatRequestWithMaxTokens, SMALL_ANSWER } from './llm-bodies.ts';

const [ROUNDS, N, CONC, KEYS] = [4, 2000, 8, 1].map((d, i) => Number(process.argv[2 + i] ?? d));
/**
 * The request's `max_tokens`: 256 unless KEYS_MAX_TOKENS=<n> (as keys.ts, ADR 0100). The upstream answers 80
 * completion tokens whatever the cap (a provider never exceeds it), so at 256 every settlement is a refund, as with a
 * real provider; KEYS_MAX_TOKENS=64 (the default until session 13) makes them all charges.
 */
const BODY = chatRequestWithMaxTokens(Number(process.env.KEYS_MAX_TOKENS ?? 256));
const here = resolve(import.meta.dirname, '../..');
const base = process.env.KEYS_BASELINE;
const prof = process.env.KEYS_PROF;
const TICK = 1e6 / 100;
const secret = (i: number): string => `sk-bench-${String(i).padStart(4, '0')}-0123456789abcdef`;
const big = (): Record<string, unknown>[] => [{ usd: 1e9, period: 'month' }, { tokens: 1e12, period: 'day' }];
/** KEYS_SHAPE=team: keys.ts's `team` shape (ADR 0105): keys without budgets, one USD budget per team, none above. */
const teamShape = process.env.KEYS_SHAPE === 'team';
if (process.env.KEYS_SHAPE !== undefined && !teamShape && process.env.KEYS_SHAPE !== 'own') throw new Error('KEYS_SHAPE: `own` or `team`');

const pin = process.env.KEYS_PIN === '1';
// -a: every thread this process already has (libuv's pool, V8's helpers), not only the main one.
if (pin) execFileSync('taskset', ['-a', '-cp', '1', String(process.pid)], { stdio: 'ignore' });

const upstream = createServer((req, res) => {
  req.resume();
  req.on('end', () => res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(SMALL_ANSWER) }).end(SMALL_ANSWER));
});
await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
const upPort = (upstream.address() as AddressInfo).port;
const work = mkdtempSync(join(tmpdir(), 'keys-gw-'));
const redisPort = process.env.KEYS_STORE === 'redis' ? await freePort() : undefined;
const redisProc = redisPort === undefined ? undefined : spawn('redis-server', ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
/** Every child this tool started (gateways, redis-server): killed when it exits, a failed run included. */
const children: ChildProcess[] = redisProc ? [redisProc] : [];
process.on('exit', () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});
const redisCli = (...args: string[]): Promise<string> => new Promise((res, rej) => {
  const p = spawn('redis-cli', ['-p', String(redisPort), ...args]);
  let out = '';
  p.stdout.on('data', (d: Buffer) => (out += d));
  p.on('exit', (code) => (code === 0 ? res(out) : rej(new Error(`redis-cli ${args.join(' ')}: ${code}`))));
});
if (redisPort !== undefined) {
  for (let i = 0; ; i++) {
    if (await redisCli('PING').then((o) => o.includes('PONG'), () => false)) break;
    if (i > 100) throw new Error('redis-server did not start');
    await new Promise((r) => setTimeout(r, 50));
  }
}
/** Redis command calls by command, and the µs Redis spent in each (`<command> µs`; INFO commandstats). */
const redisCalls = async (): Promise<Map<string, number>> => {
  const m = new Map<string, number>();
  if (redisPort === undefined) return m;
  for (const line of (await redisCli('INFO', 'commandstats')).split('\n')) {
    const hit = /^cmdstat_(\w+):calls=(\d+),usec=(\d+)/.exec(line);
    if (hit) {
      m.set(hit[1]!, Number(hit[2]));
      m.set(`${hit[1]!} µs`, Number(hit[3]));
    }
  }
  return m;
};
/** Bytes redis-server has read from its clients (INFO stats). */
const netIn = async (): Promise<number> => (redisPort === undefined ? 0 : Number(/total_net_input_bytes:(\d+)/.exec(await redisCli('INFO', 'stats'))?.[1] ?? 0));
const memory = process.env.KEYS_MEMORY === '1';
// The store in a directory of its own, as `BENCH_ONLY=keys` has it: beside the config file, every WAL write wakes the
// gateway's config watcher (it watches the config's directory: kernel/config/watch-config.ts).
const storeSpec = (dir: string): Record<string, unknown> => (redisPort !== undefined ? { redis: { url: `redis://127.0.0.1:${redisPort}`, prefix: `${dir.split('/').pop()}:` } } : { sqlite: { path: memory ? ':memory:' : join(dir, 'store', 'keys.db') } });

const gcTrace = process.env.KEYS_GC === '1';
/** KEYS_CALLGRIND=1: every gateway under valgrind's callgrind, counting only during its c=CONC phases (see the header). */
const callgrind = process.env.KEYS_CALLGRIND === '1';
const callgrindControl = (pid: number, ...args: string[]): void => void execFileSync('callgrind_control', [...args, String(pid)], { stdio: 'ignore' });
const extraArgs = (process.env.KEYS_NODE_ARGS ?? '').split(/\s+/).filter(Boolean);

interface Gw { stdout: string; gcSpans: [number, number][]; name: string; proc: ChildProcess; port: number; keyed: boolean; keys: number; redisCpu: number[]; busy: number[][]; netIn: number; cpu: number[]; rps: number[]; io: number[][]; p50: number[]; threads: Map<string, number>; calls: Map<string, number>; requests: number }

async function seed(root: string, dir: string, keys: number, teams: number): Promise<void> {
  const { openStore } = (await import(pathToFileURL(join(root, 'plugins/lib/key-store/open-store.ts')).href)) as typeof import('../../plugins/lib/key-store/open-store.ts');
  const { digestOf } = (await import(pathToFileURL(join(root, 'plugins/lib/key-store/secrets.ts')).href)) as typeof import('../../plugins/lib/key-store/secrets.ts');
  const store = await openStore(storeSpec(dir), work);
  for (let i = 0; i < keys; i++) {
    await store.create({ id: `key-${i}`, owner: `u${i}@example.com`, team: `team-${i % teams}`, budgets: teamShape ? [] : [{ unit: 'usd', limit: 1e9, period: 'month' }, { unit: 'tokens', limit: 1e12, period: 'day' }], prefix: 'sk-bench', createdAt: new Date(0).toISOString(), source: 'api' }, digestOf(secret(i)));
  }
  await store.close();
}

async function start(name: string, root: string, keyed: boolean, keys = KEYS, teamCount = Math.min(keys, 100)): Promise<Gw> {
  const dir = join(work, name.replace(/\W+/g, '-'));
  mkdirSync(dir, { recursive: true });
  const [port, admin, stats, ready] = [await freePort(), await freePort(), await freePort(), await freePort()];
  const route: Record<string, unknown> = { name: 'ai', matches: [{ path: { pathPrefix: '/' } }], backends: [{ ai: { name: 'bench', provider: { openAI: {} }, hostOverride: `127.0.0.1:${upPort}` } }] };
  if (keyed) {
    if (!memory) await seed(root, dir, keys, teamCount);
    const teams = Array.from({ length: teamCount }, (_, t) => ({ name: `team-${t}`, budgets: teamShape ? [{ usd: 1e9, period: 'month' }] : big() }));
    const declared = memory ? Array.from({ length: keys }, (_, i) => ({ id: `key-${i}`, key: secret(i), team: `team-${i % teamCount}`, ...(teamShape ? {} : { budgets: big() }) })) : undefined;
    route.policies = { virtualKeys: { store: storeSpec(dir), ...(teamShape ? {} : { budgets: big() }), teams, ...(declared ? { keys: declared } : {}) } };
  }
  const file = join(dir, 'gw.yaml');
  writeFileSync(file, stringify({ config: { adminAddr: `127.0.0.1:${admin}`, statsAddr: `127.0.0.1:${stats}`, readinessAddr: `127.0.0.1:${ready}` }, binds: [{ port, listeners: [{ name: 'bench', routes: [route] }] }] }));
  // The launcher's Node flags and environment (bin/node-flags.js: the 4 MiB semi-space, one malloc arena) given up
  // front, as the Dockerfile's ENTRYPOINT does: the gateway measured is the one users run, with no re-execution.
  const args = [...NODE_FLAGS, ...extraArgs, ...(gcTrace ? ['--trace-gc-nvp'] : []), ...(prof ? ['--cpu-prof', `--cpu-prof-dir=${join(prof, name.replace(/\W+/g, '-'))}`, `--cpu-prof-interval=${process.env.KEYS_PROF_INTERVAL ?? 1000}`] : []), join(root, 'bin/switchyard.js'), '-f', file];
  const stdout = join(dir, 'stdout');
  const out = openSync(stdout, 'w');
  const cmd = callgrind ? ['valgrind', '--tool=callgrind', '--instr-atstart=no', ...(process.env.KEYS_CACHE_SIM === '1' ? ['--cache-sim=yes'] : []), `--callgrind-out-file=${join(dir, 'callgrind.out')}`, '--smc-check=all-non-file', process.execPath, ...args] : [process.execPath, ...args];
  const proc = spawn(pin ? 'taskset' : cmd[0]!, pin ? ['-c', '0', ...cmd] : cmd.slice(1), { stdio: ['ignore', gcTrace ? out : 'ignore', 'inherit'], cwd: dir, env: { ...NODE_ENV_DEFAULTS, ...process.env } });
  closeSync(out);
  children.push(proc);
  for (let i = 0; ; i++) {
    const ok = await fetch(`http://127.0.0.1:${ready}/healthz/ready`).then((r) => r.ok, () => false);
    if (ok) break;
    if (i > (callgrind ? 3000 : 300)) throw new Error(`${name} not ready`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return { stdout, gcSpans: [], name, proc, port, keyed, keys, redisCpu: [], busy: [], netIn: 0, cpu: [], rps: [], io: [], p50: [], threads: new Map(), calls: new Map(), requests: 0 };
}

/** The process's I/O system calls (/proc/<pid>/io): bytes read, bytes written, read calls, write calls. */
const ioOf = (pid: number): number[] => {
  const io = readFileSync(`/proc/${pid}/io`, 'utf8');
  return ['rchar', 'wchar', 'syscr', 'syscw'].map((k) => Number(new RegExp(`${k}: (\\d+)`).exec(io)![1]));
};

/** A process's CPU µs, all threads, from the scheduler's nanosecond counts (/proc's 10 ms ticks made Redis's 3.3 µs steps). */
const cpuOf = (pid: number): number => {
  let ns = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
  return ns / 1000;
};

/** Each CPU's busy and total jiffies so far (/proc/stat's cpuN lines): a phase's busy share per CPU. */
const cpusBusy = (): [number, number][] =>
  readFileSync('/proc/stat', 'utf8')
    .split('\n')
    .filter((l) => /^cpu\d/.test(l))
    .map((l) => {
      const f = l.trim().split(/\s+/).slice(1).map(Number);
      const idle = f[3]! + f[4]!;
      const total = f.reduce((a, b) => a + b, 0);
      return [total - idle, total];
    });

/** CPU µs by thread name (KEYS_THREADS=1 prints it per gateway). */
const threadsOf = (pid: number): Map<string, number> => {
  const m = new Map<string, number>();
  for (const t of readdirSync(`/proc/${pid}/task`)) {
    try {
      const st = readFileSync(`/proc/${pid}/task/${t}/stat`, 'utf8');
      const name = st.slice(st.indexOf('(') + 1, st.lastIndexOf(')'));
      const f = st.split(') ')[1]!.split(' ');
      m.set(name, (m.get(name) ?? 0) + (Number(f[11]) + Number(f[12])) * TICK);
    } catch {}
  }
  return m;
};

const agent = new Agent({ keepAlive: true, maxSockets: 64 });
let seq = 0;
function one(gw: Gw): Promise<number> {
  const t = performance.now();
  const i = seq++ % gw.keys;
  return new Promise((res, rej) => {
    const r = httpRequest({ host: '127.0.0.1', port: gw.port, path: '/v1/chat/completions', method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(BODY), ...(gw.keyed ? { authorization: `Bearer ${secret(i)}` } : {}) } }, (resp) => {
      resp.resume();
      resp.on('end', () => (resp.statusCode === 200 ? res(performance.now() - t) : rej(new Error(`${gw.name}: ${resp.statusCode}`))));
    });
    r.on('error', rej);
    r.end(BODY);
  });
}
const loadS = Number(process.env.KEYS_LOAD_S ?? 0);
/** One c=`c` phase of `loadS` seconds by autocannon (load.ts, a child process: pinned with this one); its requests. */
async function autocannonPhase(gw: Gw, c: number): Promise<{ requests: number; rps: number }> {
  const job = {
    url: `http://127.0.0.1:${gw.port}/v1/chat/completions`,
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(gw.keyed ? { authorization: `Bearer ${secret(0)}` } : {}) },
    ...(gw.keyed && gw.keys > 1 ? { numberedHeader: { name: 'authorization', value: `Bearer ${secret(0).replace('0000', '[<n>]')}`, count: gw.keys, width: 4 } } : {}),
    body: BODY,
    warmupS: 0,
    connections: c,
    throughputS: loadS,
    latencyS: 0,
  };
  const p = spawn(process.execPath, ['--no-deprecation', join(here, 'test/bench/load.ts'), JSON.stringify([job])], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  p.stdout!.on('data', (d: Buffer) => (out += d));
  await new Promise((r) => p.once('exit', r));
  const t = (JSON.parse(out.trim().split('\n').pop()!) as { throughput: { requests: number; ok: number; rps: number } }).throughput;
  if (t.ok !== t.requests) throw new Error(`${gw.name}: ${t.requests - t.ok} of ${t.requests} requests failed`);
  return t;
}
async function load(gw: Gw, n: number, c: number): Promise<number[]> {
  const times: number[] = [];
  let left = n;
  await Promise.all(Array.from({ length: c }, async () => { while (left-- > 0) times.push(await one(gw)); }));
  return times.sort((a, b) => a - b);
}

const kind = redisPort === undefined ? 'sqlite' : 'redis';
const gws: Gw[] = [await start('plain', here, false), await start(`${kind} new`, here, true)];
if (process.env.KEYS_ONE && KEYS > 1) gws.push(await start(`${kind} new, 1 key`, here, true, 1));
if (process.env.KEYS_ONE_TEAM && KEYS > 1) gws.push(await start(`${kind} new, ${KEYS} keys in 1 team`, here, true, KEYS, 1));
if (base) gws.push(await start(`${kind} base`, base, true));
if (base && process.env.KEYS_ONE && KEYS > 1) gws.push(await start(`${kind} base, 1 key`, base, true, 1));
// Warm-up: every key used once, so the rounds measure keys in use, not their first lookups and states.
for (const g of gws) await load(g, Math.max(500, g.keys), CONC);
for (let r = 0; r < ROUNDS; r++) {
  for (const g of r % 2 ? [...gws].reverse() : gws) {
    const c0 = cpuOf(g.proc.pid!);
    const io0 = ioOf(g.proc.pid!);
    const t0 = threadsOf(g.proc.pid!);
    const r0 = await redisCalls();
    const rc0 = redisProc ? cpuOf(redisProc.pid!) : 0;
    const n0 = await netIn();
    const s0 = statSync(g.stdout).size;
    const b0 = cpusBusy();
    if (callgrind) callgrindControl(g.proc.pid!, '-i', 'on');
    const phase = loadS > 0 ? await autocannonPhase(g, CONC) : { requests: (await load(g, N, CONC)).length, rps: NaN };
    const n = phase.requests;
    if (callgrind) callgrindControl(g.proc.pid!, '-i', 'off');
    g.busy.push(cpusBusy().map(([busy, total], i) => (100 * (busy - b0[i]![0])) / Math.max(1, total - b0[i]![1])));
    g.rps.push(phase.rps);
    g.gcSpans.push([s0, statSync(g.stdout).size]);
    if (redisProc) g.redisCpu.push((cpuOf(redisProc.pid!) - rc0) / n);
    g.netIn += (await netIn()) - n0;
    for (const [k, v] of await redisCalls()) g.calls.set(k, (g.calls.get(k) ?? 0) + v - (r0.get(k) ?? 0));
    g.requests += n;
    g.cpu.push((cpuOf(g.proc.pid!) - c0) / n);
    g.io.push(ioOf(g.proc.pid!).map((v, i) => (v - io0[i]!) / n));
    for (const [k, v] of threadsOf(g.proc.pid!)) g.threads.set(k, (g.threads.get(k) ?? 0) + (v - (t0.get(k) ?? 0)) / n / ROUNDS);
    const t = await load(g, Math.min(N, 500), 1);
    g.p50.push(t[t.length >> 1]! * 1000);
  }
}
const med = (a: number[]): number => [...a].sort((x, y) => x - y)[a.length >> 1]!;
const plain = gws[0]!;
console.log(`keys=${KEYS} conc=${CONC} ${ROUNDS}x${loadS > 0 ? `${loadS} s (autocannon)` : N}${pin ? ' pinned (gateways CPU 0, load CPU 1)' : ''}\n| gateway | CPU µs/req c=${CONC} (rounds) | median |${loadS > 0 ? ' req/s (rounds, median) |' : ''} p50 µs c=1 (rounds) | added p50 vs plain |\n|---|---|---:|${loadS > 0 ? '---|' : ''}---|---:|`);
for (const g of gws) console.log(`| ${g.name} | ${g.cpu.map((x) => x.toFixed(0)).join(', ')} | ${med(g.cpu).toFixed(0)} |${loadS > 0 ? ` ${g.rps.map((x) => x.toFixed(0)).join(', ')} (${med(g.rps).toFixed(0)}) |` : ''} ${g.p50.map((x) => x.toFixed(0)).join(', ')} | ${(med(g.p50) - med(plain.p50)).toFixed(0)} |`);
for (const g of gws) console.log(`${g.name} I/O per request at c=${CONC} (medians): read ${med(g.io.map((r) => r[0]!)).toFixed(0)} B in ${med(g.io.map((r) => r[2]!)).toFixed(2)} calls, written ${med(g.io.map((r) => r[1]!)).toFixed(0)} B in ${med(g.io.map((r) => r[3]!)).toFixed(2)} calls`);
for (const g of gws) console.log(`${g.name} busy % per CPU at c=${CONC} (medians): ${g.busy[0]!.map((_, i) => `CPU ${i} ${med(g.busy.map((r) => r[i]!)).toFixed(0)}`).join(', ')}`);
if (process.env.KEYS_THREADS) for (const g of gws) console.log(`${g.name} threads µs/req: ${[...g.threads].filter(([, v]) => v > 0).map(([k, v]) => `${k} ${v.toFixed(0)}`).join(', ')}`);
if (gcTrace) {
  for (const g of gws) {
    const text = readFileSync(g.stdout);
    let scavenges = 0, promoted = 0, allocated = 0, scavengeMs = 0, mcs = 0, mcMs = 0, oldGrowth = 0;
    for (const [from, to] of g.gcSpans) {
      // The heap's objects after each GC: what a scavenge leaves over what the previous GC left is what reached the
      // old generation meanwhile (promoted, and allocated there directly: large arrays, Map tables, pretenured sites).
      let prevEnd: number | undefined;
      for (const line of text.subarray(from, to).toString('latin1').split('\n')) {
        const kind = / gc=(\w+) /.exec(line)?.[1];
        if (kind === undefined) continue;
        const num = (k: string): number => Number(new RegExp(` ${k}=([\\d.]+)`).exec(line)?.[1] ?? 0);
        allocated += num('allocated');
        const endSize = num('end_object_size');
        if (kind === 's' && prevEnd !== undefined) oldGrowth += endSize - prevEnd;
        prevEnd = endSize;
        if (kind === 's') {
          scavenges++;
          promoted += num('promoted');
          scavengeMs += num('pause');
        } else if (kind === 'mc' || kind === 'mmc') {
          mcs++;
          mcMs += num('pause');
        }
      }
    }
    const n = g.requests;
    console.log(`${g.name} GC at c=${CONC} per 1,000 requests: ${(scavenges * 1000 / n).toFixed(1)} scavenges (${(scavengeMs * 1000 / n).toFixed(1)} ms), promoted ${(promoted / n).toFixed(0)} B/req, old generation +${(oldGrowth / n).toFixed(0)} B/req, allocated ${(allocated / n / 1024).toFixed(2)} KiB/req, mark-compacts ${mcs} (${mcMs.toFixed(1)} ms in all, ${(mcMs * 1000 / n).toFixed(2)} ms per 1,000)`);
  }
}
if (redisPort !== undefined) {
  for (const g of gws.slice(1)) console.log(`${g.name} Redis calls per request at c=${CONC} (and Redis's µs in them, EVALSHA's including its commands): ${[...g.calls].filter(([k, v]) => v > 0 && !k.startsWith('info') && !k.endsWith(' µs')).map(([k, v]) => `${k} ${(v / g.requests).toFixed(3)} (${((g.calls.get(`${k} µs`) ?? 0) / g.requests).toFixed(2)} µs)`).join(', ')}`);
  // redis-cli's own INFO calls are in these (a few hundred bytes per phase of N requests).
  for (const g of gws) console.log(`${g.name} redis-server CPU µs/req at c=${CONC}: ${g.redisCpu.map((x) => x.toFixed(1)).join(', ')} (median ${med(g.redisCpu).toFixed(1)}); bytes read per request ${(g.netIn / g.requests).toFixed(0)}`);
}
for (const g of gws) {
  g.proc.kill('SIGINT');
  await new Promise((r) => g.proc.once('exit', r));
}
if (callgrind) {
  for (const g of gws) {
    const text = readFileSync(join(dirname(g.stdout), 'callgrind.out'), 'utf8');
    const events = /^events: (.*)$/m.exec(text)![1]!.split(' ');
    // The largest of the file's summary and totals lines (a part's header may say 0).
    const totals = [...text.matchAll(/^(?:summary|totals): (.*)$/gm)].map((m) => m[1]!.split(' ').map(Number)).reduce((a, b) => a.map((v, i) => Math.max(v, b[i] ?? 0)));
    console.log(`${g.name} under callgrind, per request at c=${CONC}: ${events.map((e, i) => `${e} ${(totals[i]! / g.requests).toFixed(0)}`).join(', ')}`);
  }
}
agent.destroy();
upstream.close();
if (redisProc) {
  redisProc.kill('SIGTERM');
  await new Promise((r) => redisProc.once('exit', r));
}
// KEYS_KEEP=1 keeps the gateways' directories (configs, stores, KEYS_GC's stdout files) for a look afterwards.
if (process.env.KEYS_KEEP === '1') console.log(`kept ${work}`);
else rmSync(work, { recursive: true, force: true });
