// RSS under load, A/B, shorter than `BENCH_ONLY=peers` (issue 15 item 3; docs/perf.md "Session 13, rsspkg"): the
// peers bench's Switchyard row (its config, nginx upstream, POSTs of the 220 B chat body, access log to a file, the
// gateway pinned to CPU 0, the load on CPU 1) for several launchers at once, their phases interleaved round by round
// (order alternating). Per phase: the largest VmRSS while loaded (sampled every 200 ms, as the peers bench does),
// CPU µs per request, req/s, and the V8 heap and external memory the gateway's /metrics reports after the phase.
//
// Usage: node test/bench/rss-ab.ts [--rounds 4] [--seconds 6] [--connections 50] [--size small|large]
//          name=/path/with/bin/switchyard.js  name2=pack:/path/to/checkout ...
//   A path is a checkout (its TypeScript sources) or an installed package's folder (`<app>/node_modules/switchyard`);
//   `pack:<checkout>` packs that checkout and installs the tarball into an empty app first (the peers bench's
//   installed row, test/helpers/packed-install.ts). After the path, `+node=--flag,--other` gives that gateway more
//   node flags and `+env=NAME=value,OTHER=value` more environment (e.g. `x=/app/node_modules/switchyard+env=
//   NODE_DISABLE_COMPILE_CACHE=1`). RSS_AB_NODE_ARGS: node flags for every gateway.
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { closeSync, mkdirSync, mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { freePort } from '../helpers/ports.ts';
import { packAndInstall } from '../helpers/packed-install.ts';
import type { Job, JobResult } from './load.ts';
import { CHAT_REQUEST, LARGE_PATH, SMALL_PATH } from './llm-bodies.ts';
import { gatewayConfig, nginxUpstreamConfig } from './peers.ts';

interface Gateway {
  readonly name: string;
  readonly cli: string;
  readonly nodeArgs: readonly string[];
  readonly env: NodeJS.ProcessEnv;
  child?: ChildProcess;
  url: string;
  stats: number;
  readonly rss: number[];
  readonly cpu: number[];
  readonly rps: number[];
  readonly heapUsed: number[];
  readonly heapTotal: number[];
  readonly external: number[];
}

const argValue = (args: string[], name: string, fallback: string): string => {
  const i = args.indexOf(name);
  return i >= 0 && args[i + 1] !== undefined ? args[i + 1]! : fallback;
};
const MiB = 1048576;
const fmt = (n: number, digits = 1): string => (Number.isFinite(n) ? n.toFixed(digits) : '-');
const median = (v: readonly number[]): number => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)]!;
const range = (v: readonly number[], digits = 1): string => `${fmt(median(v), digits)} [${fmt(Math.min(...v), digits)}-${fmt(Math.max(...v), digits)}]`;

const children: ChildProcess[] = [];
function start(cpus: string, args: string[], stdout: number | 'ignore' | 'pipe' = 'ignore', env?: NodeJS.ProcessEnv): ChildProcess {
  const child = spawn('taskset', ['-c', cpus, ...args], { stdio: ['ignore', stdout, 'inherit'], env });
  children.push(child);
  return child;
}
async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((done) => child.once('exit', done));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 3000);
  await exited;
  clearTimeout(timer);
}
async function waitFor200(url: string, child: ChildProcess, timeoutMs = 60_000): Promise<void> {
  const until = performance.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`exited (${child.exitCode}) before ${url} answered`);
    if (await fetch(url).then((r) => r.status === 200, () => false)) return;
    if (performance.now() > until) throw new Error(`${url} not ready`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
async function metric(stats: number, name: string): Promise<number> {
  const body = await (await fetch(`http://127.0.0.1:${stats}/metrics`)).text();
  const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(body);
  return m ? Number(m[1]) : NaN;
}

/** Every phase in one load-generator process on CPU 1 (load.ts); `onResult` as each phase ends, in order. */
async function load(jobs: readonly Job[], onResult: (r: JobResult) => Promise<void>): Promise<void> {
  const child = start('1', [process.execPath, '--no-deprecation', new URL('./load.ts', import.meta.url).pathname, JSON.stringify(jobs)], 'pipe');
  let pending = Promise.resolve();
  let buffered = '';
  child.stdout!.setEncoding('utf8').on('data', (s: string) => {
    buffered += s;
    for (let nl; (nl = buffered.indexOf('\n')) !== -1; ) {
      const line = buffered.slice(0, nl).trim();
      buffered = buffered.slice(nl + 1);
      if (line.startsWith('{')) pending = pending.then(() => onResult(JSON.parse(line) as JobResult));
    }
  });
  const code = await new Promise((done) => child.once('exit', done));
  await pending;
  if (code !== 0) throw new Error(`load generator exited ${code}`);
}

async function main(args: string[]): Promise<void> {
  const rounds = Number(argValue(args, '--rounds', '4'));
  const seconds = Number(argValue(args, '--seconds', '6'));
  const connections = Number(argValue(args, '--connections', '50'));
  const path = argValue(args, '--size', 'small') === 'large' ? LARGE_PATH : SMALL_PATH;
  const named = args.filter((a) => a.includes('=') && !a.startsWith('--')).map((a) => [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)] as const);
  if (named.length === 0) throw new Error('name=/path (a checkout or an installed package folder) or name=pack:/path/to/checkout, at least one');
  const nodeArgs = (process.env.RSS_AB_NODE_ARGS ?? '').split(/\s+/).filter(Boolean);
  const dir = mkdtempSync(join(tmpdir(), 'rss-ab-'));
  try {
    const gateways: Gateway[] = [];
    for (const [name, spec] of named) {
      const [where, ...options] = spec.split('+');
      const option = (key: string): string[] => options.filter((o) => o.startsWith(`${key}=`)).flatMap((o) => o.slice(key.length + 1).split(','));
      let root = resolve(where!);
      if (where!.startsWith('pack:')) {
        mkdirSync(join(dir, name));
        root = (await packAndInstall(resolve(where!.slice('pack:'.length)), join(dir, name), 600_000)).installed;
        console.log(`${name}: packed and installed into ${root}`);
      }
      const env = { ...process.env, ...Object.fromEntries(option('env').map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)])) };
      gateways.push({ name, cli: join(root, 'bin/switchyard.js'), nodeArgs: [...nodeArgs, ...option('node')], env, url: '', stats: 0, rss: [], cpu: [], rps: [], heapUsed: [], heapTotal: [], external: [] });
    }
    const upstreamPort = await freePort();
    writeFileSync(join(dir, 'nginx.conf'), nginxUpstreamConfig(dir, upstreamPort));
    const nginx = start('1', ['nginx', '-p', dir, '-e', join(dir, 'error.log'), '-c', join(dir, 'nginx.conf')]);
    await waitFor200(`http://127.0.0.1:${upstreamPort}${SMALL_PATH}`, nginx, 5000);
    for (const g of gateways) {
      const file = join(dir, `${g.name}.yaml`);
      const cfg = await gatewayConfig(file, upstreamPort);
      const ready = `http://127.0.0.1:${cfg.readiness}/healthz/ready`;
      // A start to ready and back first: the measured start then finds Node's compile cache warm, as the peers
      // bench's does (a clone's cold start loads the TypeScript stripper, +12-16 MiB).
      const warm = start('0', [process.execPath, ...g.nodeArgs, g.cli, '-f', file], 'ignore', g.env);
      await waitFor200(ready, warm);
      await stop(warm);
      const fd = openSync(join(dir, `${g.name}-access.log`), 'w');
      g.child = start('0', [process.execPath, ...g.nodeArgs, g.cli, '-f', file], fd, g.env);
      closeSync(fd);
      await waitFor200(ready, g.child);
      g.url = `http://127.0.0.1:${cfg.port}${path}`;
      g.stats = cfg.stats;
    }
    const order: Gateway[] = [];
    const jobs: Job[] = [];
    for (let round = 0; round < rounds; round++) {
      for (const g of round % 2 === 0 ? gateways : [...gateways].reverse()) {
        order.push(g);
        const pids = [g.child!.pid!]; // taskset execs the command; the CLI re-executes itself in place (same PID)
        jobs.push({ url: g.url, method: 'POST', headers: { 'content-type': 'application/json' }, body: CHAT_REQUEST, warmupS: round === 0 ? 2 : 0.3, connections, throughputS: seconds, latencyS: 0, cpuPids: pids, rssPids: pids });
      }
    }
    await load(jobs, async (r) => {
      const g = order[r.index]!;
      const t = r.throughput;
      g.rss.push(t.rssMiB);
      g.cpu.push(t.cpuUsPerReq);
      g.rps.push(t.rps);
      g.heapUsed.push((await metric(g.stats, 'nodejs_heap_size_used_bytes')) / MiB);
      g.heapTotal.push((await metric(g.stats, 'nodejs_heap_size_total_bytes')) / MiB);
      g.external.push((await metric(g.stats, 'nodejs_external_memory_bytes')) / MiB);
      const k = g.rss.length - 1;
      console.log(`round ${Math.floor(r.index / gateways.length) + 1} ${g.name}: RSS ${fmt(t.rssMiB)} MiB, ${fmt(t.cpuUsPerReq)} CPU µs/req, ${fmt(t.rps, 0)} req/s, heap ${fmt(g.heapUsed[k]!)} used / ${fmt(g.heapTotal[k]!)} MiB, external ${fmt(g.external[k]!)} MiB${t.ok < t.requests ? `, ${t.requests - t.ok} not 2xx` : ''}`);
    });
    console.log(`\n${rounds} rounds of ${seconds} s at c=${connections}, POST ${CHAT_REQUEST.length} B → ${path}; medians [ranges]`);
    console.log('\n| gateway | RSS under load MiB | ÷ first, per round | CPU µs/req | req/s | V8 heap used MiB | V8 heap total MiB | external MiB |');
    console.log('|---|---:|---|---:|---:|---:|---:|---:|');
    const first = gateways[0]!;
    for (const g of gateways) {
      const perRound = g.rss.map((v, i) => fmt(v / first.rss[i]!, 3)).join(', ');
      console.log(`| ${g.name} | ${range(g.rss)} | ${perRound} | ${range(g.cpu)} | ${range(g.rps, 0)} | ${range(g.heapUsed)} | ${range(g.heapTotal)} | ${range(g.external)} |`);
    }
  } finally {
    await Promise.all(children.map(stop));
    rmSync(dir, { recursive: true, force: true });
  }
}

await main(process.argv.slice(2));
