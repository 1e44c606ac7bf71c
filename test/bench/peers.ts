// BENCH_ONLY=peers (issue 15 item 1): Switchyard beside the reference implementation (agentgateway, Rust) and the
// bare undici proxy, loaded the way users load an LLM gateway: keep-alive clients POSTing a 220-byte chat-completion
// body, answered with a small completion (320 B) or a 16 KiB one, and every gateway writing its access log to a file.
//
// Rows, each with both answers: the upstream hit directly, the bare undici proxy (bare-proxy.ts), Switchyard on a
// `host` route twice, as users run it (the npm package packed from this checkout and installed into an empty app,
// which runs the esbuild bundle: peers-installed.ts, ADR 0098; the headline) and as the clone runs it (the
// TypeScript sources), and agentgateway on the same `host` route with one worker thread (WORKER_THREADS=1), when its binary
// exists (BENCH_AGENTGATEWAY, else `../shared/peers/agentgateway/agentgateway` beside the checkout or beside its
// worktree folder). The proxies under test are pinned to the same CPU; the upstream (nginx when on PATH, else
// upstream.ts) and the load generator share the others. See docs/perf.md, "Peers".
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, readSync, statSync, writeFileSync } from 'node:fs';
import { userInfo } from 'node:os';
import { dirname, join } from 'node:path';
import { stringify } from 'yaml';
import { freePort } from '../helpers/ports.ts';
import type { Job, JobResult } from './load.ts';
import { nginxHead } from './nginx.ts';
import { installedCli } from './peers-installed.ts';
import { printPeerTables } from './peers-tables.ts';
import type { Kind, PeerRow, Target } from './peers-tables.ts';
import { CHAT_REQUEST, LARGE_ANSWER, LARGE_PATH, SMALL_ANSWER, SMALL_PATH } from './llm-bodies.ts';
import type { Child } from './run.ts';

/** What run.ts lends the scenario: its process tracking (every child stopped by PID), pinning and load generator. */
export interface BenchKit {
  readonly root: string;
  readonly node: string;
  readonly cli: string;
  readonly here: string;
  /** The run's temporary directory (removed at exit). */
  readonly work: string;
  readonly cpuTarget: string;
  readonly cpuRest: string;
  readonly pinned: boolean;
  readonly warmupS: number;
  readonly throughputS: number;
  readonly latencyS: number;
  readonly connections: number;
  readonly rounds: number;
  startPinned(name: string, cpus: string, command: string, args: string[], stdout?: 'pipe' | 'ignore' | number, env?: NodeJS.ProcessEnv): Child;
  stop(child: Child): Promise<void>;
  listening(child: Child): Promise<void>;
  waitFor200(url: string, child: Child | undefined, t0: number, timeoutMs?: number): Promise<number>;
  post(url: string, body: string, headers: Record<string, string>): Promise<{ status: number; body: string }>;
  load(jobs: readonly Job[], onResult?: (r: JobResult) => void): Promise<JobResult[]>;
  processTree(pid: number): number[];
  onPath(bin: string): string | undefined;
  fmt(n: number, digits?: number): string;
  median(values: readonly number[]): number;
}

const HEADERS = { 'content-type': 'application/json' };

/** The reference build: BENCH_AGENTGATEWAY, else `../shared/peers/agentgateway/` beside the checkout or its worktrees' folder. */
export function agentgatewayBinary(root: string): string | undefined {
  const env = process.env.BENCH_AGENTGATEWAY;
  if (env) return existsSync(env) ? env : undefined;
  return [join(root, '../shared/peers/agentgateway/agentgateway'), join(root, '../../shared/peers/agentgateway/agentgateway')].find((p) => existsSync(p));
}

/** The same `binds` YAML for both gateways: one `host` route for every path; the admin servers on loopback. */
export async function gatewayConfig(file: string, upstreamPort: number): Promise<{ port: number; readiness: number; stats: number }> {
  const [port, admin, stats, readiness] = [await freePort(), await freePort(), await freePort(), await freePort()];
  const route = { name: 'host', matches: [{ path: { pathPrefix: '/' } }], backends: [{ host: `127.0.0.1:${upstreamPort}` }] };
  writeFileSync(
    file,
    stringify({
      config: { adminAddr: `127.0.0.1:${admin}`, statsAddr: `127.0.0.1:${stats}`, readinessAddr: `127.0.0.1:${readiness}` },
      binds: [{ port, listeners: [{ name: 'bench', routes: [route] }] }],
    }),
  );
  return { port, readiness, stats };
}

/**
 * nginx as the upstream: 1 worker, no access log, keep-alive. Static files answer POSTs with 405, which
 * `error_page 405 =200` turns into the file (an internal redirect as a GET); `return` cannot hold 16 KiB. The worker
 * runs as the bench's user (nginx ignores `user` when not started as root): the files are in the run's 0700 directory.
 */
export function nginxUpstreamConfig(dir: string, port: number): string {
  mkdirSync(join(dir, 'www'), { recursive: true });
  writeFileSync(join(dir, 'www/small.json'), SMALL_ANSWER);
  writeFileSync(join(dir, 'www/large.json'), LARGE_ANSWER);
  return `${nginxHead(dir, userInfo().username)}
  default_type application/json;
  server {
    listen 127.0.0.1:${port};
    keepalive_requests 1000000;
    keepalive_timeout 65s;
    root ${dir}/www;
    location = /small.json { internal; }
    location = /large.json { internal; }
    location /small { error_page 405 =200 /small.json; rewrite ^ /small.json break; }
    location /large { error_page 405 =200 /large.json; rewrite ^ /large.json break; }
  }
}
`;
}

/** Access-log lines in a gateway's stdout: `<time> INFO  request …` (Switchyard), `<time>\tinfo\trequest …` (agentgateway). */
const ACCESS_LINE = /^\S+\s+info\s+request\s/gim;

/** Counted in 1 MiB chunks: a full run's logs reach hundreds of MiB. */
function lineCount(file: string): { lines: number; mib: number } {
  let fd: number | undefined;
  try {
    fd = openSync(file, 'r');
    const buf = Buffer.alloc(1 << 20);
    let lines = 0;
    let carry = '';
    for (let n; (n = readSync(fd, buf, 0, buf.length, null)) > 0; ) {
      const text = carry + buf.toString('latin1', 0, n);
      const end = text.lastIndexOf('\n') + 1;
      lines += text.slice(0, end).match(ACCESS_LINE)?.length ?? 0;
      carry = text.slice(end);
    }
    lines += carry.match(ACCESS_LINE)?.length ?? 0;
    return { lines, mib: statSync(file).size / 1048576 };
  } catch {
    return { lines: 0, mib: 0 };
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/**
 * One start of a clone's CLI to ready and back, before the measured one. The first start after a checkout changes
 * strips its TypeScript with Node's stripper (amaro, swc in WebAssembly), which then stays in the process: +12-16 MiB
 * of RSS, idle and under load (docs/perf.md "Tails and memory, session 6"). Its exit writes Node's compile cache, so
 * the measured start, like the installed package (plain JavaScript), never loads the stripper.
 */
// With the node flags and environment of the measured start: the compile cache is kept per set of V8 flags, so a
// baseline given `--bytecode-old-age=1` or `--max-semi-space-size=16` warmed without them would start cold.
async function warmCompileCache(kit: BenchKit, cli: string, file: string, readiness: number, nodeArgs: readonly string[] = [], env?: NodeJS.ProcessEnv): Promise<void> {
  const child = kit.startPinned('switchyard (compile cache warm-up)', kit.cpuTarget, kit.node, [...nodeArgs, cli, '-f', file], 'ignore', env);
  try {
    await kit.waitFor200(`http://127.0.0.1:${readiness}/healthz/ready`, child, performance.now());
  } finally {
    await kit.stop(child);
  }
}

/** BENCH_ONLY=peers: the rows above, a table per row and a table of ratios; returns the exit code. */
export async function peersOnly(kit: BenchKit, notes: string[]): Promise<number> {
  const { fmt, median } = kit;
  const dir = join(kit.work, 'peers');
  mkdirSync(dir, { recursive: true });

  // The upstream, beside the load generator.
  const upstreamPort = await freePort();
  const nginxBin = kit.onPath('nginx');
  let upstream: Child;
  let upstreamName: string;
  if (nginxBin) {
    const ndir = join(dir, 'nginx');
    mkdirSync(ndir, { recursive: true });
    writeFileSync(join(ndir, 'nginx.conf'), nginxUpstreamConfig(ndir, upstreamPort));
    upstream = kit.startPinned('nginx upstream', kit.cpuRest, nginxBin, ['-p', ndir, '-e', join(ndir, 'error.log'), '-c', join(ndir, 'nginx.conf')], 'ignore');
    await kit.waitFor200(`http://127.0.0.1:${upstreamPort}${SMALL_PATH}`, upstream, performance.now(), 5000).catch((err: Error) => {
      const log = existsSync(join(ndir, 'error.log')) ? readFileSync(join(ndir, 'error.log'), 'utf8').slice(-1000) : '';
      throw new Error(`nginx upstream: ${err.message}\n${log}`);
    });
    upstreamName = 'nginx (1 worker)';
  } else {
    upstream = kit.startPinned('upstream', kit.cpuRest, kit.node, [join(kit.here, 'upstream.ts'), String(upstreamPort)]);
    await kit.listening(upstream);
    upstreamName = 'upstream.ts (node:http)';
    notes.push('nginx is not on PATH: the upstream is test/bench/upstream.ts');
  }

  const targets: Target[] = [];
  targets.push({ kind: 'direct', name: 'direct upstream', base: `http://127.0.0.1:${upstreamPort}`, child: upstream, pids: [] });

  const barePort = await freePort();
  const bare = kit.startPinned('bare proxy', kit.cpuTarget, kit.node, [join(kit.here, 'bare-proxy.ts'), String(barePort), String(upstreamPort)]);
  await kit.listening(bare);
  targets.push({ kind: 'bare', name: 'bare undici proxy', base: `http://127.0.0.1:${barePort}`, child: bare, pids: [] });

  // Switchyard as users run it: the npm package (packed from this checkout, installed into an empty app), then as
  // the clone runs it. Same config, pinning and access log (on by default, to stdout, a file here) for both.
  const installed = await installedCli(kit.root, dir, notes, (line) => console.log(line));
  const logs: Partial<Record<Kind, string>> = {};
  const startSwitchyard = async (kind: Kind, name: string, cli: string, nodeArgs: readonly string[] = [], env?: NodeJS.ProcessEnv): Promise<void> => {
    const file = join(dir, `${kind}.yaml`);
    const gw = await gatewayConfig(file, upstreamPort);
    await warmCompileCache(kit, cli, file, gw.readiness, nodeArgs, env);
    logs[kind] = join(dir, `${kind}-access.log`);
    const fd = openSync(logs[kind], 'w');
    const child = kit.startPinned(name, kit.cpuTarget, kit.node, [...nodeArgs, cli, '-f', file], fd, env);
    closeSync(fd);
    await kit.waitFor200(`http://127.0.0.1:${gw.readiness}/healthz/ready`, child, performance.now());
    targets.push({ kind, name, base: `http://127.0.0.1:${gw.port}`, child, pids: [] });
  };
  if (installed) await startSwitchyard('installed', 'switchyard installed package', installed);
  await startSwitchyard('switchyard', 'switchyard clone (TypeScript sources)', kit.cli);

  // BENCH_PEERS_BASELINE: another checkout's Switchyard (or an installed package's folder; `installed`: this run's
  // installed package, for a flag A/B on what users run), same config and pinning,
  // its rows interleaved with this one's (A/B in one run). BENCH_PEERS_BASELINE_NODE_ARGS: node flags for
  // it (the same checkout with `--max-semi-space-size=16` measures a V8 setting). A flag the CLI sets itself skips
  // its re-execution and with it the environment of bin/node-flags.js, so BENCH_PEERS_BASELINE_ENV (`NAME=value`
  // words, e.g. `MALLOC_ARENA_MAX=1`) sets the baseline's environment: without it such an A/B also compares arenas.
  const baselineDir = process.env.BENCH_PEERS_BASELINE === 'installed' ? installed && dirname(dirname(installed)) : process.env.BENCH_PEERS_BASELINE;
  if (process.env.BENCH_PEERS_BASELINE === 'installed' && !installed) notes.push('BENCH_PEERS_BASELINE=installed: no installed package, no baseline rows');
  const baselineArgs = (process.env.BENCH_PEERS_BASELINE_NODE_ARGS ?? '').split(/\s+/).filter(Boolean);
  const baselineEnv = (process.env.BENCH_PEERS_BASELINE_ENV ?? '').split(/\s+/).filter((kv) => kv.includes('='));
  if (baselineDir) {
    const env = { ...process.env, ...Object.fromEntries(baselineEnv.map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)])) };
    const name = `switchyard baseline (${[...baselineEnv, baselineDir, ...baselineArgs].join(' ')})`;
    await startSwitchyard('baseline', name, join(baselineDir, 'bin/switchyard.js'), baselineArgs, env);
  }

  // agentgateway: one worker thread, pinned like Switchyard; its default logging (access log included) to a file.
  const agBin = agentgatewayBinary(kit.root);
  if (agBin) {
    const agFile = join(dir, 'agentgateway.yaml');
    const ag = await gatewayConfig(agFile, upstreamPort);
    logs.agentgateway = join(dir, 'agentgateway-access.log');
    const agFd = openSync(logs.agentgateway, 'w');
    const agentgateway = kit.startPinned('agentgateway', kit.cpuTarget, agBin, ['-f', agFile], agFd, { ...process.env, WORKER_THREADS: '1' });
    closeSync(agFd);
    try {
      await kit.waitFor200(`http://127.0.0.1:${ag.readiness}/healthz/ready`, agentgateway, performance.now());
      targets.push({ kind: 'agentgateway', name: 'agentgateway host route (1 worker thread)', base: `http://127.0.0.1:${ag.port}`, child: agentgateway, pids: [] });
      notes.push(`agentgateway: ${agBin}; its binds listen on every interface (it has no bind address), the bench only connects over loopback`);
    } catch (err) {
      notes.push(`agentgateway did not start, its rows are skipped: ${(err as Error).message.slice(0, 300)}`);
      await kit.stop(agentgateway);
      delete logs.agentgateway;
    }
  } else {
    notes.push('agentgateway rows skipped: no binary at BENCH_AGENTGATEWAY or ../shared/peers/agentgateway/agentgateway');
  }
  // After readiness, so nginx's worker is there.
  for (const t of targets) t.pids = kit.processTree(t.child.proc.pid!);

  const rows: PeerRow[] = [];
  for (const t of targets) {
    for (const [size, path, answer] of [
      ['small', SMALL_PATH, SMALL_ANSWER],
      ['16 KiB', LARGE_PATH, LARGE_ANSWER],
    ] as const) {
      rows.push({ target: t, size, url: t.base + path, answer, rps: [], cpu: [], p50c1: [], p99c1: [], p99cN: [], rss: [], bad: 0, errors: 0, served: 0 });
    }
  }
  // Sanity: every row answers 200 with the whole answer.
  for (const r of rows) {
    const res = await kit.post(r.url, CHAT_REQUEST, HEADERS);
    if (res.status !== 200 || res.body.length !== r.answer.length) {
      throw new Error(`${r.target.name} (${r.size}) answered ${res.status} with ${res.body.length} bytes (want 200 with ${r.answer.length}): ${res.body.slice(0, 200)}`);
    }
  }
  // Access-log lines before the load (the sanity POSTs and warm-ups wrote some).
  const logged = Object.entries(logs) as [Kind, string][];
  const linesBefore = new Map(logged.map(([kind, file]) => [kind, lineCount(file).lines]));

  await measure(kit, rows);
  for (const t of targets) await kit.stop(t.child);

  printPeerTables({ connections: kit.connections, fmt, median }, targets, rows, upstreamName);

  // The access logs were written during the load (one line per request; the sanity POSTs came before).
  const served = (kind: Kind): number => rows.filter((r) => r.target.kind === kind).reduce((n, r) => n + r.served, 0);
  const written: string[] = [];
  for (const [kind, file] of logged) {
    const now = lineCount(file);
    const lines = now.lines - linesBefore.get(kind)!;
    written.push(`${targets.find((t) => t.kind === kind)!.name} ${lines} lines (${fmt(now.mib, 1)} MiB) for ${served(kind)} measured requests`);
    if (lines < served(kind)) notes.push(`${targets.find((t) => t.kind === kind)!.name} wrote fewer access-log lines than it served requests`);
  }
  console.log(`access-log lines written to files during the load (warm-ups add some): ${written.join('; ')}`);
  for (const r of rows.filter((x) => x.bad > 0 || x.errors > 0)) notes.push(`${r.target.name} (${r.size}): ${r.bad} non-2xx and ${r.errors} errors/timeouts during the measurement`);
  return 0;
}

/** Every row in `rounds` interleaved rounds, in one load-generator process. */
async function measure(kit: BenchKit, rows: PeerRow[]): Promise<void> {
  const jobs: Job[] = [];
  for (let round = 0; round < kit.rounds; round++) {
    for (const r of rows) {
      jobs.push({
        url: r.url,
        method: 'POST',
        headers: HEADERS,
        body: CHAT_REQUEST,
        warmupS: round === 0 ? kit.warmupS : 0.3,
        connections: kit.connections,
        throughputS: kit.throughputS / kit.rounds,
        latencyS: kit.latencyS / kit.rounds,
        cpuPids: r.target.pids,
        rssPids: r.target.pids,
        sampleThroughput: true,
      });
    }
  }
  await kit.load(jobs, (res) => {
    const r = rows[res.index % rows.length]!;
    const t = res.throughput;
    r.rps.push(t.rps);
    r.cpu.push(t.cpuUsPerReq);
    r.p99cN.push(t.p99);
    r.rss.push(t.rssMiB ?? NaN);
    r.p50c1.push(res.latency?.p50 ?? NaN);
    r.p99c1.push(res.latency?.p99 ?? NaN);
    for (const ph of [t, res.latency]) {
      if (!ph) continue;
      r.bad += ph.requests - ph.ok;
      r.errors += ph.errors + ph.timeouts;
      r.served += ph.requests;
    }
    console.log(
      `round ${Math.floor(res.index / rows.length) + 1}/${kit.rounds} ${r.target.name} (${r.size}): ${kit.fmt(t.rps, 0)} req/s, ${kit.fmt(t.cpuUsPerReq, 0)} CPU µs/req, ` +
        `c=${kit.connections} p99 ${kit.fmt(t.p99, 3)} ms, c=1 p50 ${kit.fmt(res.latency?.p50 ?? NaN, 3)} p99 ${kit.fmt(res.latency?.p99 ?? NaN, 3)} ms, RSS ${kit.fmt(t.rssMiB ?? NaN, 1)} MiB`,
    );
  });
}
