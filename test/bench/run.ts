// `npm run bench`: a benchmark, not a test. Loopback only, bounded to about a minute, and every process it
// starts is stopped by its PID before it exits. See docs/perf.md for the method and the first results.
//
// Rows: the upstream hit directly, a bare undici reverse proxy (the Node ceiling, bare-proxy.ts), Switchyard on
// a plain `host` route and on a route with policies, and nginx when it is on PATH. Load comes from autocannon in
// its own process (load.ts). Then: compile time of 1,000 routes, spawn-to-ready with examples/quickstart.yaml,
// idle RSS, and a reload of the 1,000-route config under load.
//
// With `taskset` and 2+ CPUs, the proxy under test gets CPU 0 to itself and the upstream and the load generator
// share the others (the direct row uses a second upstream pinned to CPU 0), so each row measures one core's worth.
// The measured seconds are split into rounds that interleave the targets; each figure is the median of the rounds,
// so a burst of unrelated work on the machine shifts one round, not the result.
//
// Tunables: BENCH_WARMUP (2 s before a target's first round; 0.3 s before later ones), BENCH_SECONDS (6 s at
// c=BENCH_CONNECTIONS, default 50), BENCH_LATENCY_SECONDS (3 s at c=1), BENCH_ROUNDS (3),
// BENCH_RELOAD_SECONDS (5), BENCH_PIN=0 (no CPU pinning).
import { execFileSync, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { createServer } from 'node:net';
import { availableParallelism, cpus, loadavg, tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import { createGateway, LogSink } from 'switchyard';
import { fullPreset } from '../../plugins/presets/full.ts';
import { FIRST_PARTY_KEYS } from '../../plugins/presets/catalog.ts';
import { freePort } from '../helpers/ports.ts';
import type { Job, JobResult } from './load.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const NODE = process.execPath;
const CLI = join(ROOT, 'bin/switchyard.js');
const HERE = join(ROOT, 'test/bench');

const num = (name: string, fallback: number): number => {
  const v = Number(process.env[name]);
  return Number.isFinite(v) && v > 0 ? v : fallback;
};
const WARMUP_S = num('BENCH_WARMUP', 2);
const THROUGHPUT_S = num('BENCH_SECONDS', 6);
const LATENCY_S = num('BENCH_LATENCY_SECONDS', 3);
const CONNECTIONS = Math.round(num('BENCH_CONNECTIONS', 50));
const ROUNDS = Math.round(num('BENCH_ROUNDS', 3));
const RELOAD_S = num('BENCH_RELOAD_SECONDS', 5);
const ROUTES = 1000;
/** Hard stop for the whole run, whatever happens. */
const DEADLINE_MS = 240_000;

// ---------------------------------------------------------------------------------------------------------------
// Processes: every child is tracked and stopped by PID.

interface Child {
  readonly name: string;
  readonly proc: ChildProcess;
  stderr: string;
  exited: boolean;
}
const children = new Set<Child>();

function start(name: string, command: string, args: string[], stdout: 'pipe' | 'ignore' = 'pipe'): Child {
  const proc = spawn(command, args, { cwd: ROOT, stdio: ['ignore', stdout, 'pipe'], env: process.env });
  const child: Child = { name, proc, stderr: '', exited: false };
  children.add(child);
  proc.stderr!.setEncoding('utf8').on('data', (s: string) => {
    child.stderr = (child.stderr + s).slice(-4000);
  });
  proc.on('exit', () => {
    child.exited = true;
    children.delete(child);
  });
  proc.on('error', (err) => {
    child.stderr += `\nspawn failed: ${err.message}`;
    child.exited = true;
    children.delete(child);
  });
  return child;
}

async function stop(child: Child): Promise<void> {
  if (child.exited || child.proc.pid === undefined) return;
  const exited = new Promise<void>((resolve) => child.proc.once('exit', () => resolve()));
  process.kill(child.proc.pid, 'SIGTERM');
  const timer = setTimeout(() => {
    if (!child.exited && child.proc.pid !== undefined) process.kill(child.proc.pid, 'SIGKILL');
  }, 3000);
  await exited;
  clearTimeout(timer);
}

async function stopAll(): Promise<void> {
  await Promise.all([...children].map((c) => stop(c).catch(() => undefined)));
}

process.on('exit', () => {
  for (const c of children) if (!c.exited && c.proc.pid !== undefined) {
    try {
      process.kill(c.proc.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
});
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    process.stderr.write(`\nbench: ${signal}, stopping child processes\n`);
    void stopAll().finally(() => process.exit(130));
  });
}
const deadline = setTimeout(() => {
  process.stderr.write(`\nbench: passed the ${DEADLINE_MS / 1000}s deadline, stopping\n`);
  void stopAll().finally(() => process.exit(2));
}, DEADLINE_MS);

/** Resolves with the port once the child prints `listening PORT`. */
function listening(child: Child, timeoutMs = 10_000): Promise<void> {
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`${child.name} did not start: ${child.stderr}`)), timeoutMs);
    child.proc.stdout!.setEncoding('utf8').on('data', (s: string) => {
      out += s;
      if (out.includes('listening ')) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.proc.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${child.name} exited (${code}): ${child.stderr}`));
    });
  });
}

// ---------------------------------------------------------------------------------------------------------------
// Small helpers

function get(url: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { headers: { connection: 'close', ...headers }, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (s: string) => (body += s));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.setTimeout(2000, () => req.destroy(new Error('timeout')));
    req.end();
  });
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Poll until GET url is 200; returns ms since `t0`. */
async function waitFor200(url: string, child: Child | undefined, t0: number, timeoutMs = 15_000): Promise<number> {
  for (;;) {
    if (child?.exited) throw new Error(`${child.name} exited: ${child.stderr.trim()}`);
    try {
      if ((await get(url)).status === 200) return performance.now() - t0;
    } catch {
      // not listening yet
    }
    if (performance.now() - t0 > timeoutMs) throw new Error(`${url} not 200 after ${timeoutMs} ms${child ? `: ${child.stderr}` : ''}`);
    await sleep(5);
  }
}

function portFree(port: number, host: string): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen({ port, host, ipv6Only: false }, () => s.close(() => resolve(true)));
  });
}

/** The process and its children (nginx: master and workers). */
function processTree(pid: number): number[] {
  try {
    const kids = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
    return [pid, ...kids.flatMap(processTree)];
  } catch {
    return [pid];
  }
}

function rssMiB(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}

function onPath(bin: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (dir && existsSync(join(dir, bin))) return join(dir, bin);
  }
  return undefined;
}

const TASKSET = process.env.BENCH_PIN !== '0' && availableParallelism() >= 2 ? onPath('taskset') : undefined;
/** CPU 0 for the process under test; the other CPUs for the upstream and the load generator. */
const CPU_TARGET = '0';
const CPU_REST = availableParallelism() > 2 ? `1-${availableParallelism() - 1}` : '1';

/** Spawn `command` pinned to `cpus` (taskset execs the command, so the PID is the command's own). */
function startPinned(name: string, cpus: string, command: string, args: string[], stdout: 'pipe' | 'ignore' = 'pipe'): Child {
  return TASKSET ? start(name, TASKSET, ['-c', cpus, command, ...args], stdout) : start(name, command, args, stdout);
}

const fmt = (n: number, digits = 2): string => (Number.isFinite(n) ? n.toFixed(digits) : 'n/a');

// ---------------------------------------------------------------------------------------------------------------
// Configs

const work = mkdtempSync(join(tmpdir(), 'switchyard-bench-'));

interface Ports {
  admin: number;
  stats: number;
  readiness: number;
}
async function adminPorts(): Promise<Ports> {
  return { admin: await freePort(), stats: await freePort(), readiness: await freePort() };
}
const staticBlock = (p: Ports) => ({ adminAddr: `127.0.0.1:${p.admin}`, statsAddr: `127.0.0.1:${p.stats}`, readinessAddr: `127.0.0.1:${p.readiness}` });

function policySet(extended: boolean): Record<string, unknown> {
  const policies: Record<string, unknown> = {
    requestHeaderModifier: { add: { 'x-bench': 'policies' }, set: { 'x-bench-route': 'policies' }, remove: ['x-remove-me'] },
    responseHeaderModifier: { set: { 'x-served-by': 'switchyard' }, remove: ['x-powered-by'] },
  };
  if (extended) {
    policies.cors = {
      allowOrigins: ['https://bench.example'],
      allowMethods: ['GET', 'POST'],
      allowHeaders: ['content-type', 'authorization'],
      exposeHeaders: ['x-served-by'],
      maxAge: '600s',
    };
    // Large enough never to trip during the run.
    policies.localRateLimit = [{ maxTokens: 1_000_000_000, tokensPerFill: 1_000_000_000, fillInterval: '1s' }];
  }
  return policies;
}

function benchConfig(p: Ports, port: number, upstream: number, extended: boolean): string {
  return stringify({
    config: staticBlock(p),
    binds: [
      {
        port,
        listeners: [
          {
            name: 'bench',
            routes: [
              { name: 'plain', matches: [{ path: { pathPrefix: '/plain' } }], backends: [{ host: `127.0.0.1:${upstream}` }] },
              { name: 'policies', matches: [{ path: { pathPrefix: '/policies' } }], policies: policySet(extended), backends: [{ host: `127.0.0.1:${upstream}` }] },
            ],
          },
        ],
      },
    ],
  });
}

/** 999 varied routes plus `target` last (the worst case for first-match selection). `variant` changes the text. */
function manyRoutesConfig(p: Ports, port: number, upstream: number, variant: number): string {
  const routes: Record<string, unknown>[] = [];
  for (let i = 0; i < ROUTES - 1; i++) {
    const kind = i % 4;
    const path =
      kind === 0 ? { exact: `/svc-${i}` } : kind === 1 ? { pathPrefix: `/svc-${i}/` } : kind === 2 ? { regex: `/svc-${i}/[0-9]+` } : { pathPrefix: `/tenant-${i}/` };
    const match: Record<string, unknown> = { path };
    if (kind === 3) match.headers = [{ name: 'x-tenant', value: { exact: `t-${i}` } }];
    if (i % 10 === 5) match.method = 'POST';
    const route: Record<string, unknown> = { name: `r${i}`, matches: [match], backends: [{ host: `127.0.0.1:${upstream}` }] };
    if (i % 3 === 0) route.policies = { requestHeaderModifier: { set: { 'x-route': `r${i}`, 'x-variant': String(variant) } } };
    if (i % 50 === 7) route.hostnames = [`svc${i}.example.com`];
    routes.push(route);
  }
  routes.push({
    name: 'target',
    matches: [{ path: { pathPrefix: '/target' } }],
    policies: { requestHeaderModifier: { set: { 'x-variant': String(variant) } } },
    backends: [{ host: `127.0.0.1:${upstream}` }],
  });
  return stringify({ config: staticBlock(p), binds: [{ port, listeners: [{ name: 'many', routes }] }] });
}

function writeAtomic(file: string, text: string): void {
  const tmp = `${file}.tmp-${process.pid}`;
  writeFileSync(tmp, text);
  renameSync(tmp, file);
}

// ---------------------------------------------------------------------------------------------------------------
// Load

/** Run jobs in one load-generator process; `onResult` sees each result as it arrives. */
async function load(jobs: readonly Job[], onResult: (r: JobResult) => void = () => undefined): Promise<JobResult[]> {
  const child = startPinned('load generator', CPU_REST, NODE, ['--no-deprecation', join(HERE, 'load.ts'), JSON.stringify(jobs)]);
  const results: JobResult[] = [];
  let buffered = '';
  child.proc.stdout!.setEncoding('utf8').on('data', (s: string) => {
    buffered += s;
    let nl: number;
    while ((nl = buffered.indexOf('\n')) !== -1) {
      const line = buffered.slice(0, nl).trim();
      buffered = buffered.slice(nl + 1);
      if (!line.startsWith('{')) continue;
      const r = JSON.parse(line) as JobResult;
      results.push(r);
      onResult(r);
    }
  });
  const seconds = jobs.reduce((sum, j) => sum + j.warmupS + j.throughputS + j.latencyS + 1, 0);
  const timer = setTimeout(() => void stop(child), (seconds + 20) * 1000);
  const code = await new Promise<number | null>((resolve) => child.proc.once('exit', (c) => resolve(c)));
  clearTimeout(timer);
  if (code !== 0 || results.length !== jobs.length) throw new Error(`load generator failed (exit ${code}): ${child.stderr.trim()}`);
  return results;
}

// ---------------------------------------------------------------------------------------------------------------
// Steps

interface Row {
  readonly name: string;
  readonly url: string;
  readonly headers?: Record<string, string>;
  /** Per round: 2xx/s at c=CONNECTIONS, and p50/p99 (ms) at c=1. */
  readonly rps: number[];
  readonly p50: number[];
  readonly p99: number[];
  /** Per round: CPU µs the serving processes spent per request at c=CONNECTIONS. */
  readonly cpu: number[];
  pids: number[];
  bad: number;
  errors: number;
}

function median(values: readonly number[]): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}
const rps = (r: Row): number => median(r.rps);
const p50 = (r: Row): number => median(r.p50);
const p99 = (r: Row): number => median(r.p99);
const cpuPerReq = (r: Row): number => median(r.cpu);
/** Half the range of the rounds' req/s, in % of the median: a noisy machine shows here. */
function spreadPct(r: Row): number {
  return r.rps.length < 2 ? 0 : (100 * (Math.max(...r.rps) - Math.min(...r.rps))) / 2 / rps(r);
}
const spread = (r: Row): string => (r.rps.length < 2 ? '' : `±${fmt(spreadPct(r), 0)}%`);
/** Above this spread (%) of the throughput rounds, throughput verdicts use CPU per request instead. */
const NOISY_SPREAD = 20;

async function compileBench(): Promise<{ prepareMs: number; firstMs: number; medianMs: number; runsMs: number[]; routes: number }> {
  const text = manyRoutesConfig({ admin: 1, stats: 2, readiness: 3 }, 8080, 9, 0);
  const gateway = createGateway(
    { preset: fullPreset, knownKeys: FIRST_PARTY_KEYS, config: { name: 'bench-1000-routes.yaml', text }, watch: false },
    new LogSink(() => undefined),
  );
  let t = performance.now();
  await gateway.prepare(text);
  const prepareMs = performance.now() - t;
  const runsMs: number[] = [];
  let routes = 0;
  for (let i = 0; i < 4; i++) {
    // A different text each time, as a reload would bring.
    const variant = i === 0 ? text : text.replace('x-variant: "0"', `x-variant: "${i}"`);
    t = performance.now();
    const snapshot = await gateway.compile(variant);
    runsMs.push(performance.now() - t);
    if (i === 0) for (const bind of snapshot.binds.values()) for (const l of bind.listeners) routes += l.routes.length;
    snapshot.dispose();
  }
  await gateway.stop().catch(() => undefined);
  const later = runsMs.slice(1).sort((a, b) => a - b);
  return { prepareMs, firstMs: runsMs[0]!, medianMs: later[later.length >> 1]!, runsMs, routes };
}

const QUICKSTART_PORTS = [3000, 3001, 15000, 15020, 15021];

async function quickstartBench(): Promise<{ readyMs: number; runsMs: number[]; rssMiB: number } | string> {
  const busy: number[] = [];
  for (const port of QUICKSTART_PORTS) if (!(await portFree(port, port < 15000 ? '::' : '127.0.0.1'))) busy.push(port);
  if (busy.length) return `skipped: port(s) ${busy.join(', ')} busy (examples/quickstart.yaml needs 3000/3001/15000/15020/15021)`;
  const runsMs: number[] = [];
  let rss = NaN;
  for (let i = 0; i < 3; i++) {
    const t0 = performance.now();
    const gw = start('switchyard quickstart', NODE, [CLI, '-f', join(ROOT, 'examples/quickstart.yaml')], 'ignore');
    try {
      runsMs.push(await waitFor200('http://127.0.0.1:15021/healthz/ready', gw, t0));
      if (i === 2) {
        const hello = await get('http://127.0.0.1:3000/hello');
        if (hello.status !== 200) throw new Error(`quickstart /hello answered ${hello.status}`);
        await sleep(1000); // idle
        rss = rssMiB(gw.proc.pid!);
      }
    } finally {
      await stop(gw);
    }
  }
  const sorted = [...runsMs].sort((a, b) => a - b);
  return { readyMs: sorted[1]!, runsMs, rssMiB: rss };
}

function nginxConfig(dir: string, port: number, upstream: number): string {
  for (const d of ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']) mkdirSync(join(dir, d), { recursive: true });
  return `worker_processes 1;
daemon off;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path ${dir}/client_body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  upstream bench_upstream { server 127.0.0.1:${upstream}; keepalive 64; }
  server {
    listen 127.0.0.1:${port};
    keepalive_requests 1000000;
    location / {
      proxy_pass http://bench_upstream;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
    }
  }
}
`;
}

/** Which optional policies are installed (from `switchyard plugins`). */
function installedPolicies(): Set<string> {
  const out = execFileSync(NODE, [CLI, 'plugins'], { cwd: ROOT, encoding: 'utf8', timeout: 20_000 });
  const keys = new Set<string>();
  for (const line of out.split('\n')) {
    const m = /^(\w+)\s+(\S+)/.exec(line);
    if (m && m[1] !== 'KIND') keys.add(m[2]!);
  }
  return keys;
}

function validate(file: string): string | undefined {
  try {
    execFileSync(NODE, [CLI, '--validate-only', '-f', file], { cwd: ROOT, encoding: 'utf8', timeout: 20_000, stdio: ['ignore', 'pipe', 'pipe'] });
    return undefined;
  } catch (err) {
    const e = err as { stderr?: string; stdout?: string; message: string };
    return (e.stderr || e.stdout || e.message).trim();
  }
}

async function metricValue(statsPort: number, name: string): Promise<number> {
  const { body } = await get(`http://127.0.0.1:${statsPort}/metrics`);
  const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(body);
  return m ? Number(m[1]) : NaN;
}

// ---------------------------------------------------------------------------------------------------------------

async function main(): Promise<number> {
  if (!process.features.typescript) {
    process.stderr.write('bench: needs a Node with TypeScript type stripping (Node 24): run it with `npm run bench`\n');
    return 1;
  }
  const cpu = cpus()[0]?.model ?? 'unknown CPU';
  let revision = 'unknown revision';
  try {
    const head = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    revision = `${head}${dirty ? ' + local changes' : ''}`;
  } catch {
    // not a git checkout
  }
  console.log(`# Switchyard bench at ${revision}: ${availableParallelism()} CPU (${cpu}), Node ${process.version}, load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
  console.log(
    `# c=${CONNECTIONS} for ${THROUGHPUT_S} s and c=1 for ${LATENCY_S} s per target, in ${ROUNDS} interleaved rounds (medians), after a ${WARMUP_S} s warm-up; ` +
      `autocannon in its own process; ${TASKSET ? `target pinned to CPU ${CPU_TARGET}, upstream and load generator on CPU ${CPU_REST}` : 'no CPU pinning'}\n`,
  );
  const notes: string[] = [];

  // 1. Compile 1,000 routes in this process (nothing else runs yet).
  const compile = await compileBench();
  console.log(
    `compile ${compile.routes} routes: ${compile.runsMs.map((ms) => fmt(ms, 0)).join(', ')} ms (median after the first: ${fmt(compile.medianMs, 0)} ms); ` +
      `plugin registry + schema validator, built once before: ${fmt(compile.prepareMs, 0)} ms`,
  );

  // 2. Spawn-to-ready and idle RSS with the quickstart.
  const quick = await quickstartBench();
  if (typeof quick === 'string') console.log(`quickstart: ${quick}`);
  else console.log(`quickstart: readiness 200 at ${quick.runsMs.map((ms) => fmt(ms, 0)).join(', ')} ms after spawn (median ${fmt(quick.readyMs, 0)}); idle RSS ${fmt(quick.rssMiB, 1)} MiB (full preset)`);

  // 3. Targets. Two upstreams: one beside the load generator for the proxies, one on the target CPU for `direct`.
  const upstreamPort = await freePort();
  const upstream = startPinned('upstream', CPU_REST, NODE, [join(HERE, 'upstream.ts'), String(upstreamPort)]);
  const directPort = await freePort();
  const directUpstream = startPinned('upstream (direct row)', CPU_TARGET, NODE, [join(HERE, 'upstream.ts'), String(directPort)]);
  const barePort = await freePort();
  const bare = startPinned('bare proxy', CPU_TARGET, NODE, [join(HERE, 'bare-proxy.ts'), String(barePort), String(upstreamPort)]);
  await Promise.all([listening(upstream), listening(directUpstream), listening(bare)]);

  const installed = installedPolicies();
  let extended = installed.has('cors') && installed.has('localRateLimit');
  const gwPorts = await adminPorts();
  const gwPort = await freePort();
  const configFile = join(work, 'bench.yaml');
  writeFileSync(configFile, benchConfig(gwPorts, gwPort, upstreamPort, extended));
  if (extended) {
    const problem = validate(configFile);
    if (problem) {
      notes.push(`cors + localRateLimit are installed but the bench config for them was rejected; the policies row ran without them:\n${problem}`);
      extended = false;
      writeFileSync(configFile, benchConfig(gwPorts, gwPort, upstreamPort, false));
    }
  }
  const policyNames = Object.keys(policySet(extended)).join(' + ');
  if (!extended) notes.push(`policies route: ${policyNames} only (cors and localRateLimit join it once they are installed)`);
  // Access log on (the default), written to /dev/null so terminal output does not distort the result.
  const gateway = startPinned('switchyard', CPU_TARGET, NODE, [CLI, '-f', configFile], 'ignore');
  await waitFor200(`http://127.0.0.1:${gwPorts.readiness}/healthz/ready`, gateway, performance.now());

  let nginx: Child | undefined;
  let nginxPort = 0;
  const nginxBin = onPath('nginx');
  if (nginxBin) {
    const dir = join(work, 'nginx');
    mkdirSync(dir, { recursive: true });
    nginxPort = await freePort();
    writeFileSync(join(dir, 'nginx.conf'), nginxConfig(dir, nginxPort, upstreamPort));
    nginx = startPinned('nginx', CPU_TARGET, nginxBin, ['-p', dir, '-e', join(dir, 'error.log'), '-c', join(dir, 'nginx.conf')], 'ignore');
    try {
      await waitFor200(`http://127.0.0.1:${nginxPort}/`, nginx, performance.now(), 5000);
    } catch (err) {
      notes.push(`nginx did not start, row skipped: ${(err as Error).message.slice(0, 300)}`);
      await stop(nginx);
      nginx = undefined;
    }
  } else notes.push('nginx is not on PATH: row skipped');

  const row = (name: string, url: string, server: Child, headers?: Record<string, string>): Row => ({
    name,
    url,
    headers,
    rps: [],
    p50: [],
    p99: [],
    cpu: [],
    pids: processTree(server.proc.pid!),
    bad: 0,
    errors: 0,
  });
  const direct = row('direct upstream', `http://127.0.0.1:${directPort}/plain`, directUpstream);
  const bareRow = row('bare undici proxy', `http://127.0.0.1:${barePort}/plain`, bare);
  const plain = row('switchyard plain', `http://127.0.0.1:${gwPort}/plain`, gateway);
  const policies = row('switchyard policies', `http://127.0.0.1:${gwPort}/policies`, gateway, extended ? { origin: 'https://bench.example' } : undefined);
  const rows = [direct, bareRow, plain, policies];
  if (nginx) rows.push(row('nginx (1 worker)', `http://127.0.0.1:${nginxPort}/plain`, nginx));
  // Sanity: each target answers 200 with the upstream's body.
  for (const r of rows) {
    const res = await get(r.url, r.headers);
    if (res.status !== 200 || !res.body.includes('bench-upstream')) throw new Error(`${r.name} answered ${res.status}: ${res.body.slice(0, 200)}`);
  }

  const jobs: Job[] = [];
  const jobRows: Row[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    for (const r of rows) {
      jobs.push({
        url: r.url,
        headers: r.headers,
        warmupS: round === 0 ? WARMUP_S : 0.3,
        connections: CONNECTIONS,
        throughputS: THROUGHPUT_S / ROUNDS,
        latencyS: LATENCY_S / ROUNDS,
        cpuPids: r.pids,
      });
      jobRows.push(r);
    }
  }
  await load(jobs, (res) => {
    const r = jobRows[res.index]!;
    r.rps.push(res.throughput.rps);
    r.p50.push(res.latency?.p50 ?? NaN);
    r.p99.push(res.latency?.p99 ?? NaN);
    r.cpu.push(res.throughput.cpuUsPerReq);
    for (const ph of [res.throughput, res.latency]) {
      if (!ph) continue;
      r.bad += ph.requests - ph.ok;
      r.errors += ph.errors + ph.timeouts;
    }
    const round = Math.floor(res.index / rows.length) + 1;
    console.log(
      `round ${round}/${ROUNDS} ${r.name}: ${fmt(res.throughput.rps, 0)} req/s, ${fmt(res.throughput.cpuUsPerReq, 0)} CPU µs/req, c=1 p50 ${fmt(res.latency?.p50 ?? NaN, 3)} ms`,
    );
  });
  const gatewayRss = rssMiB(gateway.proc.pid!);
  await stop(gateway);
  if (nginx) {
    const workers = rows[rows.length - 1]!.pids.slice(1);
    await stop(nginx);
    // The master stops its workers; make sure none outlived it.
    for (const pid of workers) {
      try {
        if (readFileSync(`/proc/${pid}/cmdline`, 'utf8').startsWith('nginx')) process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  }
  await stop(bare);
  await stop(directUpstream);

  // 4. Reload of 1,000 routes under load.
  const manyPorts = await adminPorts();
  const manyPort = await freePort();
  const manyFile = join(work, 'many.yaml');
  writeFileSync(manyFile, manyRoutesConfig(manyPorts, manyPort, upstreamPort, 0));
  const t0 = performance.now();
  const many = startPinned('switchyard (1,000 routes)', CPU_TARGET, NODE, [CLI, '-f', manyFile], 'ignore');
  const manyReadyMs = await waitFor200(`http://127.0.0.1:${manyPorts.readiness}/healthz/ready`, many, t0);
  const reloadLoad = load([{ url: `http://127.0.0.1:${manyPort}/target`, warmupS: 0, connections: CONNECTIONS, throughputS: RELOAD_S, latencyS: 0 }]);
  const loadStart = performance.now();
  const reloads: string[] = [];
  for (const [at, variant] of [
    [0.35, 1],
    [0.7, 2],
  ] as const) {
    await sleep(Math.max(0, loadStart + RELOAD_S * 1000 * at - performance.now()));
    const before = await metricValue(manyPorts.stats, 'switchyard_config_generation');
    const t = performance.now();
    writeAtomic(manyFile, manyRoutesConfig(manyPorts, manyPort, upstreamPort, variant));
    let generation = before;
    while (generation === before && performance.now() - t < 3000) {
      await sleep(10);
      generation = await metricValue(manyPorts.stats, 'switchyard_config_generation').catch(() => before);
    }
    reloads.push(generation > before ? `generation ${before}→${generation} live ${fmt(performance.now() - t, 0)} ms after the write` : 'no new generation within 3 s');
  }
  const reloadResult = (await reloadLoad)[0]!.throughput;
  const reloadApplied = await metricValue(manyPorts.stats, 'switchyard_config_reloads_total\\{result="applied"\\}');
  await stop(many);
  await stopAll();

  // 5. Report.
  const addedUs = (r: Row): number => (p50(r) - p50(direct)) * 1000;
  console.log(
    `\n| target | req/s (c=${CONNECTIONS}) | p50 ms (c=1) | p99 ms (c=1) | × bare | × direct | added p50 vs direct | CPU µs/req | bare/this CPU |`,
  );
  console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const r of rows) {
    console.log(
      `| ${r.name} | ${fmt(rps(r), 0)} ${spread(r)} | ${fmt(p50(r), 3)} | ${fmt(p99(r), 3)} | ${fmt(rps(r) / rps(bareRow))} | ${fmt(rps(r) / rps(direct))} | ` +
        `${r === direct ? '—' : `+${fmt(addedUs(r), 0)} µs`} | ${fmt(cpuPerReq(r), 0)} | ${fmt(cpuPerReq(bareRow) / cpuPerReq(r))} |`,
    );
  }
  for (const r of rows.filter((x) => x.bad > 0 || x.errors > 0)) notes.push(`${r.name}: ${r.bad} non-2xx and ${r.errors} errors/timeouts during the measurement`);
  console.log(`\npolicies route: ${policyNames}`);
  console.log(`Switchyard RSS after the load: ${fmt(gatewayRss, 1)} MiB`);

  const checks: [string, boolean, string][] = [];
  // On one pinned core, throughput is about 1 / CPU per request. When other work on the machine scatters the
  // throughput rounds, the CPU ratio is the steadier estimate, so the verdict uses it and says so.
  const throughputCheck = (what: string, r: Row, min: number): void => {
    const byRps = rps(r) / rps(bareRow);
    const byCpu = cpuPerReq(bareRow) / cpuPerReq(r);
    const scatter = Math.max(spreadPct(r), spreadPct(bareRow));
    const noisy = scatter > NOISY_SPREAD && Number.isFinite(byCpu);
    const basis = noisy ? byCpu : byRps;
    checks.push([
      what,
      basis >= min,
      `${fmt(byRps)}× by throughput, ${fmt(byCpu)}× by CPU per request` +
        (noisy ? ` (verdict by CPU: throughput rounds were up to ±${fmt(scatter, 0)}% apart)` : ''),
    ]);
  };
  throughputCheck('plain route throughput ≥ 0.8× bare proxy', plain, 0.8);
  const addedPlain = addedUs(plain);
  const addedBare = addedUs(bareRow);
  checks.push([
    'plain route added p50 (c=1) ≤ 1.3× bare proxy’s',
    addedPlain <= 1.3 * addedBare,
    `+${fmt(addedPlain, 0)} µs vs +${fmt(addedBare, 0)} µs (${fmt(addedPlain / addedBare)}×)`,
  ]);
  throughputCheck('policy route throughput ≥ 0.7× bare proxy', policies, 0.7);
  checks.push([
    `${compile.routes} routes compile ≤ 200 ms (median of 3 after a first)`,
    compile.medianMs <= 200,
    `${fmt(compile.medianMs, 0)} ms (first compile in the process ${fmt(compile.firstMs, 0)} ms)`,
  ]);
  if (typeof quick === 'string') {
    checks.push(['ready ≤ 500 ms after spawn (quickstart, median of 3)', false, quick]);
    checks.push(['idle RSS ≤ 100 MiB (full preset)', false, quick]);
  } else {
    checks.push(['ready ≤ 500 ms after spawn (quickstart, median of 3)', quick.readyMs <= 500, `${fmt(quick.readyMs, 0)} ms`]);
    checks.push(['idle RSS ≤ 100 MiB (full preset)', quick.rssMiB <= 100, `${fmt(quick.rssMiB, 1)} MiB`]);
  }
  const reloadBad = reloadResult.requests - reloadResult.ok + reloadResult.errors + reloadResult.timeouts;
  checks.push([
    `reload of ${ROUTES} routes under load fails no request`,
    reloadBad === 0 && reloadApplied >= 2,
    `${reloadResult.requests - reloadResult.ok} non-2xx, ${reloadResult.errors} errors, ${reloadResult.timeouts} timeouts of ${reloadResult.requests}; ${reloadApplied} reloads applied`,
  ]);

  console.log('\n| target check | verdict | measured |');
  console.log('|---|---|---|');
  for (const [what, ok, measured] of checks) console.log(`| ${what} | ${ok ? 'PASS' : 'MISS'} | ${measured} |`);

  console.log(
    `\nreload under load: ${ROUTES}-route config (target = the last route), c=${CONNECTIONS} for ${RELOAD_S} s: ${fmt(reloadResult.rps, 0)} req/s, ` +
      `p99 ${fmt(reloadResult.p99, 0)} ms (whole ms); ready ${fmt(manyReadyMs, 0)} ms after spawn; ${reloads.join('; ')}`,
  );
  if (notes.length) console.log(`\nnotes:\n${notes.map((n) => `- ${n}`).join('\n')}`);
  console.log(`\nload average at the end: ${loadavg().map((l) => l.toFixed(2)).join(' ')} (other work on the machine skews the results)`);
  return 0;
}

let code = 1;
try {
  code = await main();
} catch (err) {
  process.stderr.write(`\nbench failed: ${(err as Error).stack ?? String(err)}\n`);
} finally {
  await stopAll();
  clearTimeout(deadline);
  rmSync(work, { recursive: true, force: true });
}
process.exit(code);
