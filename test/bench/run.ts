// `npm run bench`: a benchmark, not a test. Loopback only, bounded to about two minutes, and every process it
// starts is stopped by its PID before it exits. See docs/perf.md for the method and the first results.
//
// Rows: the upstream hit directly, a bare undici reverse proxy (the Node ceiling, bare-proxy.ts), Switchyard on
// a plain `host` route, on a route with policies and on a route with jwtAuth + two CEL rules + localRateLimit, and
// nginx when it is on PATH. The MCP scenario: JSON-RPC `tools/call` POSTs to an SDK v1 streamable-HTTP server
// (mcp-upstream.ts) directly and through a Switchyard `mcp` route (stateful: one session opened before the load,
// its `Mcp-Session-Id` on every request). Load comes from autocannon in its own process (load.ts). Then: compile
// time of 1,000 routes, spawn-to-ready with examples/quickstart.yaml, idle RSS, and a reload of the 1,000-route
// config under load.
//
// With `taskset` and 2+ CPUs, the proxy under test gets CPU 0 to itself and the upstream and the load generator
// share the others (the direct rows use a second upstream pinned to CPU 0), so each row measures one core's worth.
// The measured seconds are split into rounds that interleave the targets; each figure is the median of the rounds,
// so a burst of unrelated work on the machine shifts one round, not the result.
//
// Tunables: BENCH_WARMUP (2 s before a target's first round; 0.3 s before later ones), BENCH_SECONDS (6 s at
// c=BENCH_CONNECTIONS, default 50), BENCH_LATENCY_SECONDS (3 s at c=1), BENCH_ROUNDS (3),
// BENCH_RELOAD_SECONDS (5), BENCH_PIN=0 (no CPU pinning), BENCH_LOCK_WAIT (300 s: how long to wait for another
// bench on the machine to finish before running anyway), BENCH_ONLY=mcp (the MCP scenario alone, about 40 s),
// BENCH_ONLY=failover (one of two backends killed under load, with outlierDetection, then also retry; about 40 s),
// BENCH_ONLY=workers (the plain route with `config.workers: 2` against `workers: 1` and the bare proxy, and idle RSS per worker; about 60 s),
// BENCH_ONLY=policies (the bare proxy and the plain, policies and jwt routes alone, about 60 s; BENCH_POLICIES_BASELINE
// another checkout whose gateway adds its three rows, interleaved: A/B in one run; BENCH_POLICIES_NODE_ARGS node flags
// for this checkout's gateway, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`),
// BENCH_ONLY=routes (the big-config row alone: BENCH_BIG_ROUTES routes, default 100,000, loaded as --validate-only does),
// BENCH_MCP_NODE_ARGS (node flags for the MCP gateway, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`),
// BENCH_MCP_UPSTREAM_JSON=1 (the MCP upstreams answer JSON instead of SSE), BENCH_MCP_GATEWAY_ACCEPT (the Accept
// header of the calls to the gateway; `application/json` makes it answer JSON), BENCH_MCP_BASELINE (with
// BENCH_ONLY=mcp: a directory holding another checkout, whose gateway is measured as one more row: A/B in one run),
// BENCH_MCP_STDOUT (a file for the MCP gateway's stdout: its access log and `--trace-gc` lines),
// BENCH_ONLY=peers (Switchyard beside agentgateway and the bare proxy under LLM-style POSTs, peers.ts),
// BENCH_AGENTGATEWAY (with BENCH_ONLY=peers: the reference binary, default ../shared/peers/agentgateway/agentgateway),
// BENCH_PEERS_INSTALLED=0 (with BENCH_ONLY=peers: skip the row of the npm package packed from this checkout and installed
// into an empty app, the headline row, ADR 0098; packing takes ~30-90 s),
// BENCH_PEERS_BASELINE (with BENCH_ONLY=peers: another checkout or installed package folder, or `installed` for this run's
// installed package again, whose Switchyard is measured as more rows, interleaved: A/B in one run;
// BENCH_PEERS_BASELINE_NODE_ARGS its node flags, e.g. the same checkout with `--max-semi-space-size=16`),
// BENCH_ONLY=ai (the `ai` rows alone: an `ai` route with the openAI provider beside the bare proxy, non-streamed and
// streamed chat completions, ai.ts; BENCH_AI_BASELINE another checkout as more rows, BENCH_AI_NODE_ARGS its node flags),
// BENCH_ONLY=keys (the virtual-keys rows alone: an `ai` route without and with `virtualKeys` on SQLite and, when
// redis-server is on PATH, Redis, with 1 and 1,000 keys; the added c=1 p50 and the throughput; keys.ts),
// BENCH_ONLY=observability (the plain route with tracing off and at 100% sampling, with an admin UI live tail attached at
// saturation and at 1,000 req/s, and the admin UI page load in Chromium; observability.ts; about 60 s).
import { execFileSync, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { availableParallelism, cpus, loadavg, tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { stringify } from 'yaml';
import { createGateway, LogSink } from 'switchyard';
import { fullPreset } from '../../plugins/presets/full.ts';
import { FIRST_PARTY_KEYS } from '../../plugins/presets/catalog.ts';
import { freePort } from '../helpers/ports.ts';
import type { Job, JobResult } from './load.ts';
import { nginxHead } from './nginx.ts';
import { aiScenario } from './ai.ts';
import { keysScenario } from './keys.ts';
import { observabilityScenario } from './observability.ts';
import { peersOnly } from './peers.ts';
import type { BenchKit } from './peers.ts';

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
/** `mcp`: run only the MCP scenario. */
const ONLY = process.env.BENCH_ONLY;
/** Extra node flags for the MCP gateway process (`--cpu-prof --cpu-prof-dir=/tmp/prof`, `--trace-gc`). */
const MCP_NODE_ARGS = (process.env.BENCH_MCP_NODE_ARGS ?? '').split(/\s+/).filter(Boolean);
/** Both MCP upstreams answer POSTs with one JSON body instead of an SSE stream (`enableJsonResponse`). */
const MCP_UPSTREAM_JSON = process.env.BENCH_MCP_UPSTREAM_JSON === '1';
/** The `Accept` of the load's calls to the gateway (`application/json`: the gateway answers JSON, not SSE). */
const MCP_GATEWAY_ACCEPT = process.env.BENCH_MCP_GATEWAY_ACCEPT;
/** A file for the MCP gateway's stdout (access log, `--trace-gc` output); by default it goes to /dev/null. */
const MCP_STDOUT = process.env.BENCH_MCP_STDOUT;
/** BENCH_ONLY=mcp: another checkout (a directory with bin/switchyard.js) measured as one more row, for A/B runs. */
const MCP_BASELINE = process.env.BENCH_MCP_BASELINE;
/** BENCH_ONLY=policies: another checkout whose plain, policies and jwt rows are measured beside this one's. */
const POLICIES_BASELINE = process.env.BENCH_POLICIES_BASELINE;
/** BENCH_ONLY=policies: node flags for this checkout's gateway (`--cpu-prof --cpu-prof-dir=/tmp/prof`). */
const POLICIES_NODE_ARGS = (process.env.BENCH_POLICIES_NODE_ARGS ?? '').split(/\s+/).filter(Boolean);
/**
 * Hard stop for the whole run, whatever happens: 330 s at the default seconds, more for longer phases
 * (BENCH_SECONDS, BENCH_LATENCY_SECONDS), or BENCH_DEADLINE_S.
 */
const DEADLINE_MS = 1000 * num('BENCH_DEADLINE_S', 330 * Math.max(1, (THROUGHPUT_S + LATENCY_S) / 9));

// ---------------------------------------------------------------------------------------------------------------
// Processes: every child is tracked and stopped by PID.

export interface Child {
  readonly name: string;
  readonly proc: ChildProcess;
  stderr: string;
  exited: boolean;
}
const children = new Set<Child>();

/** `stdout` may be an open file descriptor (a gateway's access log written to a file). */
function start(name: string, command: string, args: string[], stdout: 'pipe' | 'ignore' | number = 'pipe', env: NodeJS.ProcessEnv = process.env): Child {
  const proc = spawn(command, args, { cwd: ROOT, stdio: ['ignore', stdout, 'pipe'], env });
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
/** Armed once the bench holds the lock (waiting for another bench does not count). */
let deadline: NodeJS.Timeout | undefined;
function armDeadline(): void {
  deadline = setTimeout(() => {
    process.stderr.write(`\nbench: passed the ${DEADLINE_MS / 1000}s deadline, stopping\n`);
    void stopAll().finally(() => process.exit(2));
  }, DEADLINE_MS);
}

// One bench at a time on the machine: two runs pinned to the same CPU would each measure the other. The lock file
// holds the PID of the bench that runs; a file whose process is gone is taken over.
const LOCK = join(tmpdir(), 'switchyard-bench.lock');
const LOCK_WAIT_S = process.env.BENCH_LOCK_WAIT ? Math.max(0, Number(process.env.BENCH_LOCK_WAIT) || 0) : 300;

function lockHolder(): number | undefined {
  try {
    const pid = Number(readFileSync(LOCK, 'utf8').trim());
    if (!Number.isInteger(pid) || pid <= 0) return undefined;
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('bench') ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** True once this process holds the lock; false when another bench kept it past BENCH_LOCK_WAIT seconds. */
async function acquireLock(): Promise<boolean> {
  const until = Date.now() + LOCK_WAIT_S * 1000;
  let told = false;
  for (;;) {
    try {
      writeFileSync(LOCK, String(process.pid), { flag: 'wx' });
      return true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') return true; // no lock possible here: run anyway
    }
    const holder = lockHolder();
    if (holder === undefined) {
      rmSync(LOCK, { force: true });
      continue;
    }
    if (Date.now() >= until) return false;
    if (!told) {
      process.stderr.write(`bench: another bench (PID ${holder}) is running; waiting up to ${LOCK_WAIT_S} s for it to finish\n`);
      told = true;
    }
    await sleep(1000);
  }
}

function releaseLock(): void {
  try {
    if (readFileSync(LOCK, 'utf8').trim() === String(process.pid)) rmSync(LOCK, { force: true });
  } catch {
    // not ours, or already gone
  }
}
process.on('exit', releaseLock);

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

/** POST `body` (one request, its own connection); the answer's status, headers and text. */
function post(url: string, body: string, headers: Record<string, string>): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      url,
      { method: 'POST', headers: { connection: 'close', 'content-length': String(Buffer.byteLength(body)), ...headers }, agent: false },
      (res) => {
        let text = '';
        res.setEncoding('utf8').on('data', (s: string) => (text += s));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.setTimeout(5000, () => req.destroy(new Error('timeout')));
    req.end(body);
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
function startPinned(name: string, cpus: string, command: string, args: string[], stdout: 'pipe' | 'ignore' | number = 'pipe', env?: NodeJS.ProcessEnv): Child {
  return TASKSET ? start(name, TASKSET, ['-c', cpus, command, ...args], stdout, env) : start(name, command, args, stdout, env);
}

const fmt = (n: number, digits = 2): string => (Number.isFinite(n) ? n.toFixed(digits) : 'n/a');

// ---------------------------------------------------------------------------------------------------------------
// Configs

const work = mkdtempSync(join(tmpdir(), 'switchyard-bench-'));
// Also on the exits that skip main's `finally` (a signal, the deadline).
process.on('exit', () => rmSync(work, { recursive: true, force: true }));

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

const JWT_ISSUER = 'https://issuer.bench.example';
const JWT_AUDIENCE = 'switchyard-bench';

/** jwtAuth (strict, keys from a JWKS file) + two CEL rules that must both hold + a localRateLimit that never trips. */
function jwtPolicies(jwksFile: string): Record<string, unknown> {
  return {
    jwtAuth: { mode: 'strict', issuer: JWT_ISSUER, audiences: [JWT_AUDIENCE], jwks: { file: jwksFile } },
    // `require` rules: both are evaluated on every request (plain strings are allow rules, where the first true wins).
    authorization: { rules: [{ require: 'jwt.sub == "bench-user"' }, { require: '"bench" in jwt.groups' }] },
    localRateLimit: [{ maxTokens: 1_000_000_000, tokensPerFill: 1_000_000_000, fillInterval: '1s' }],
  };
}

function benchConfig(p: Ports, port: number, upstream: number, extended: boolean, jwksFile?: string): string {
  const routes: Record<string, unknown>[] = [
    { name: 'plain', matches: [{ path: { pathPrefix: '/plain' } }], backends: [{ host: `127.0.0.1:${upstream}` }] },
    { name: 'policies', matches: [{ path: { pathPrefix: '/policies' } }], policies: policySet(extended), backends: [{ host: `127.0.0.1:${upstream}` }] },
  ];
  if (jwksFile) {
    routes.push({ name: 'jwt', matches: [{ path: { pathPrefix: '/jwt' } }], policies: jwtPolicies(jwksFile), backends: [{ host: `127.0.0.1:${upstream}` }] });
  }
  return stringify({ config: staticBlock(p), binds: [{ port, listeners: [{ name: 'bench', routes }] }] });
}

/**
 * The MCP scenario's gateway: one route whose `mcp` backend has one streamable-HTTP target. It runs in a gateway
 * process of its own, so the HTTP rows are measured in a process that never loaded the MCP code or served MCP.
 * statefulMode stays the default (stateful): the client opens one session before the load, and the gateway keeps
 * one upstream session for it. Stateless would open and initialize fresh target connections for every POST.
 */
function mcpBenchConfig(p: Ports, port: number, mcpUpstream: number): string {
  const route = {
    name: 'mcp',
    matches: [{ path: { pathPrefix: '/mcp' } }],
    backends: [{ mcp: { targets: [{ name: 'bench', mcp: { host: '127.0.0.1', port: mcpUpstream, path: '/mcp' } }] } }],
  };
  return stringify({ config: staticBlock(p), binds: [{ port, listeners: [{ name: 'mcp', routes: [route] }] }] });
}

/** 999 varied routes plus `target` last (the worst case for first-match selection). `variant` changes the text. */
function manyRoutesConfig(p: Ports, port: number, upstream: number, variant: number, count = ROUTES): string {
  const routes: Record<string, unknown>[] = [];
  for (let i = 0; i < count - 1; i++) {
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

/** An RS256 key pair made for this run: the public JWK (with a `kid`) in a JWKS file, and tokens signed with it. */
async function jwtSetup(dir: string): Promise<{ jwksFile: string; token: string; otherToken: string }> {
  const { publicKey, privateKey } = await generateKeyPair('RS256');
  const jwk = { ...(await exportJWK(publicKey)), kid: 'bench-key', alg: 'RS256', use: 'sig' };
  const jwksFile = join(dir, 'jwks.json');
  writeFileSync(jwksFile, JSON.stringify({ keys: [jwk] }));
  const sign = (sub: string): Promise<string> =>
    new SignJWT({ groups: ['bench', 'staff'] })
      .setProtectedHeader({ alg: 'RS256', kid: 'bench-key', typ: 'JWT' })
      .setIssuer(JWT_ISSUER)
      .setAudience(JWT_AUDIENCE)
      .setSubject(sub)
      .setIssuedAt()
      .setExpirationTime('1h')
      .sign(privateKey);
  return { jwksFile, token: await sign('bench-user'), otherToken: await sign('someone-else') };
}

const MCP_HEADERS: Record<string, string> = {
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
  'mcp-protocol-version': '2025-11-25',
};
/** The measured request; the load generator puts a fresh id in place of `[<id>]` for every request. */
const MCP_CALL = JSON.stringify({ jsonrpc: '2.0', id: '[<id>]', method: 'tools/call', params: { name: 'echo', arguments: { text: 'bench' } } });

/** The JSON-RPC messages of an SSE body or a JSON body. */
function mcpMessages(text: string): Record<string, unknown>[] {
  const trimmed = text.trim();
  if (trimmed.startsWith('{') || trimmed.startsWith('[')) {
    const v = JSON.parse(trimmed) as unknown;
    return (Array.isArray(v) ? v : [v]) as Record<string, unknown>[];
  }
  // Priming events (an id with empty data) carry no message.
  return text
    .split('\n')
    .filter((l) => l.startsWith('data:') && l.slice(5).trim() !== '')
    .map((l) => JSON.parse(l.slice(5)) as Record<string, unknown>);
}

/** Open an MCP session (initialize, then notifications/initialized); returns its `Mcp-Session-Id`. */
async function mcpSession(url: string): Promise<string> {
  const init = await post(
    url,
    JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'switchyard-bench', version: '1.0.0' } } }),
    { 'content-type': MCP_HEADERS['content-type']!, accept: MCP_HEADERS.accept! },
  );
  const sid = init.headers['mcp-session-id'];
  if (init.status !== 200 || typeof sid !== 'string') throw new Error(`${url}: initialize answered ${init.status}: ${init.body.slice(0, 300)}`);
  const initialized = await post(url, JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }), { ...MCP_HEADERS, 'mcp-session-id': sid });
  if (initialized.status !== 202) throw new Error(`${url}: notifications/initialized answered ${initialized.status}: ${initialized.body.slice(0, 300)}`);
  return sid;
}

// ---------------------------------------------------------------------------------------------------------------
// The MCP scenario (also run alone with BENCH_ONLY=mcp)

interface McpUpstreams {
  /** The SDK server behind the gateway (beside the load generator). */
  readonly behind: Child;
  readonly behindPort: number;
  /** The SDK server hit directly, on the target CPU. */
  readonly direct: Child;
  readonly directPort: number;
}

async function startMcpUpstreams(): Promise<McpUpstreams> {
  const extra = MCP_UPSTREAM_JSON ? ['--json'] : [];
  const behindPort = await freePort();
  const behind = startPinned('mcp upstream', CPU_REST, NODE, [join(HERE, 'mcp-upstream.ts'), String(behindPort), ...extra]);
  const directPort = await freePort();
  const direct = startPinned('mcp upstream (direct row)', CPU_TARGET, NODE, [join(HERE, 'mcp-upstream.ts'), String(directPort), ...extra]);
  await Promise.all([listening(behind), listening(direct)]);
  return { behind, behindPort, direct, directPort };
}

interface McpGatewayConfig {
  readonly file: string;
  readonly port: number;
  readonly ports: Ports;
}

/** Write and validate the MCP gateway's config; undefined (with a note) when it is rejected. */
async function mcpGatewayFile(upstreamPort: number, notes: string[], name = 'bench-mcp'): Promise<McpGatewayConfig | undefined> {
  const ports = await adminPorts();
  const port = await freePort();
  const file = join(work, `${name}.yaml`);
  writeFileSync(file, mcpBenchConfig(ports, port, upstreamPort));
  const problem = validate(file);
  if (!problem) return { file, port, ports };
  notes.push(`the MCP route was rejected; the MCP scenario is skipped:\n${problem}`);
  return undefined;
}

/** The MCP gateway process, with BENCH_MCP_NODE_ARGS (say `--cpu-prof --cpu-prof-dir=/tmp/prof`) before the CLI. */
async function startMcpGateway(config: McpGatewayConfig, cli = CLI): Promise<Child> {
  const proc = startPinned('switchyard (mcp)', CPU_TARGET, NODE, [...MCP_NODE_ARGS, cli, '-f', config.file], MCP_STDOUT ? 'pipe' : 'ignore');
  // BENCH_MCP_STDOUT: keep what the gateway prints (its access log, `--trace-gc` lines) in a file.
  if (MCP_STDOUT) proc.proc.stdout!.pipe(createWriteStream(cli === CLI ? MCP_STDOUT : `${MCP_STDOUT}.baseline`));
  await waitFor200(`http://127.0.0.1:${config.ports.readiness}/healthz/ready`, proc, performance.now());
  return proc;
}

/** One session each (initialize + notifications/initialized), then a few calls checked before the load. */
async function mcpRows(upstreams: McpUpstreams, gateway: Child, gatewayPort: number, name = 'switchyard mcp'): Promise<[Row, Row]> {
  const directUrl = `http://127.0.0.1:${upstreams.directPort}/mcp`;
  const gatewayUrl = `http://127.0.0.1:${gatewayPort}/mcp`;
  const mcpDirect = makeRow('mcp direct upstream', directUrl, upstreams.direct, { ...MCP_HEADERS, 'mcp-session-id': await mcpSession(directUrl) }, true);
  const gatewayHeaders: Record<string, string> = { ...MCP_HEADERS, 'mcp-session-id': await mcpSession(gatewayUrl) };
  if (MCP_GATEWAY_ACCEPT) gatewayHeaders.accept = MCP_GATEWAY_ACCEPT;
  const mcpGateway = makeRow(name, gatewayUrl, gateway, gatewayHeaders, true);
  mcpGateway.sidePids = [upstreams.behind.proc.pid!];
  for (const r of [mcpDirect, mcpGateway]) {
    for (let i = 0; i < 3; i++) {
      const id = `sample-${i}`;
      const res = await post(r.url, MCP_CALL.replace('[<id>]', id), r.headers!);
      const answer = mcpMessages(res.body).find((m) => m.id === id) as { result?: { content?: { text?: string }[] } } | undefined;
      if (res.status !== 200 || answer?.result?.content?.[0]?.text !== 'echo: bench') {
        throw new Error(`${r.name}: tools/call answered ${res.status}: ${res.body.slice(0, 300)}`);
      }
    }
  }
  return [mcpDirect, mcpGateway];
}

function mcpNote(mcpDirect: Row, mcpGateway: Row): string {
  return (
    `MCP rows: \`tools/call\` POSTs on one session; × direct and added p50 are against \`mcp direct upstream\`${MCP_UPSTREAM_JSON ? ' (both upstreams answer JSON: BENCH_MCP_UPSTREAM_JSON)' : ''}` +
    `${MCP_GATEWAY_ACCEPT ? ` (calls to the gateway accept only \`${MCP_GATEWAY_ACCEPT}\`)` : ''}. ` +
    `The upstream behind the gateway spent ${fmt(median(mcpGateway.sideCpu), 0)} CPU µs per call on CPU ${CPU_REST} (the direct one ${fmt(cpuPerReq(mcpDirect), 0)} on CPU ${CPU_TARGET}); ` +
    `with the load generator (${fmt(median(mcpGateway.loadCpu), 0)} µs per call) CPU ${CPU_REST} was ${fmt(100 * restBusy(mcpGateway), 0)}% busy during the gateway rows, and the gateway kept CPU ${CPU_TARGET} ${fmt(100 * targetBusy(mcpGateway), 0)}% busy. ` +
    `c=1 p99 per round: gateway ${mcpGateway.p99.map((v) => fmt(v, 3)).join(', ')} ms; direct ${mcpDirect.p99.map((v) => fmt(v, 3)).join(', ')} ms.`
  );
}

/**
 * How busy the CPUs of the upstream and the load generator were during a row's c=N rounds (median; 1 = all of them).
 * On 2 CPUs, the MCP upstream behind the gateway and the load generator share CPU 1.
 */
function restBusy(r: Row): number {
  const cores = TASKSET ? availableParallelism() - 1 : availableParallelism();
  return median(r.rps.map((rate, i) => ((r.sideCpu[i]! + r.loadCpu[i]!) * rate) / 1e6 / cores));
}
/** Above this share of CPU_REST busy, a gateway row's throughput measures that CPU, not the gateway. */
const REST_SATURATED = 0.9;
/** How busy the process under test kept its pinned CPU during a row's c=N rounds (median; 1 = saturated). */
function targetBusy(r: Row): number {
  return median(r.rps.map((rate, i) => (r.cpu[i]! * rate) / 1e6));
}
/** Below this, something other than the process under test held a row's throughput back (other work on the machine). */
const TARGET_SATURATED = 0.85;

function mcpChecks(mcpDirect: Row, mcpGateway: Row): [string, boolean, string][] {
  const added = (p50(mcpGateway) - p50(mcpDirect)) * 1000;
  const busy = restBusy(mcpGateway);
  const own = TASKSET ? targetBusy(mcpGateway) : NaN;
  let why: string | undefined;
  if (busy >= REST_SATURATED) why = `CPU ${CPU_REST} (the MCP upstream and the load generator) was ${fmt(100 * busy, 0)}% busy during the gateway rows, so their throughput measures that CPU`;
  else if (own < TARGET_SATURATED) why = `the gateway kept CPU ${CPU_TARGET} only ${fmt(100 * own, 0)}% busy, so other work on the machine held its throughput back`;
  return [
    ['MCP tools/call added p50 (c=1) ≤ 1 ms vs direct', added <= 1000, `+${fmt(added, 0)} µs (${fmt(p50(mcpGateway), 3)} vs ${fmt(p50(mcpDirect), 3)} ms)`],
    throughputVerdict(
      'MCP tools/call throughput ≥ 0.5× direct',
      mcpGateway,
      0.5,
      mcpDirect,
      why,
    ),
  ];
}

function printRows(rows: readonly Row[], baseOf: (r: Row) => Row, bareRow: Row | undefined): void {
  console.log(
    `\n| target | req/s (c=${CONNECTIONS}) | p50 ms (c=1) | p99 ms (c=1) | × bare | × direct | added p50 vs direct | CPU µs/req | bare/this CPU |`,
  );
  console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const r of rows) {
    const base = baseOf(r);
    const added = (p50(r) - p50(base)) * 1000;
    console.log(
      `| ${r.name} | ${fmt(rps(r), 0)} ${spread(r)} | ${fmt(p50(r), 3)} | ${fmt(p99(r), 3)} | ${r.mcp || !bareRow ? '—' : fmt(rps(r) / rps(bareRow))} | ${fmt(rps(r) / rps(base))} | ` +
        `${r === base ? '—' : `+${fmt(added, 0)} µs`} | ${fmt(cpuPerReq(r), 0)} | ${r.mcp || !bareRow ? '—' : fmt(cpuPerReq(bareRow) / cpuPerReq(r))} |`,
    );
  }
}

/** BENCH_ONLY=mcp: the MCP rows alone (about 30 s), nothing else. */
async function mcpOnly(notes: string[]): Promise<number> {
  const upstreams = await startMcpUpstreams();
  const config = await mcpGatewayFile(upstreams.behindPort, notes);
  if (!config) {
    console.log(notes.join('\n'));
    return 1;
  }
  const gateway = await startMcpGateway(config);
  const [mcpDirect, mcpGateway] = await mcpRows(upstreams, gateway, config.port);
  const rows = [mcpDirect, mcpGateway];
  // A/B in one run: the same scenario through another checkout's gateway, interleaved with this one's.
  if (MCP_BASELINE) {
    const baseConfig = await mcpGatewayFile(upstreams.behindPort, notes, 'bench-mcp-baseline');
    if (baseConfig) {
      const baseGateway = await startMcpGateway(baseConfig, join(MCP_BASELINE, 'bin/switchyard.js'));
      const [, baseRow] = await mcpRows(upstreams, baseGateway, baseConfig.port, `switchyard mcp (${MCP_BASELINE})`);
      rows.splice(1, 0, baseRow);
    }
  }
  await measure(rows);
  const rss = rssMiB(gateway.proc.pid!);
  await stop(gateway);
  await stopAll();
  printRows(rows, () => mcpDirect, undefined);
  console.log(`\n${mcpNote(mcpDirect, mcpGateway)}`);
  for (const r of rows) console.log(`${r.name}: CPU µs/req per round ${r.cpu.map((v) => fmt(v, 0)).join(', ')}; c=1 p50 ${r.p50.map((v) => fmt(v, 3)).join(', ')} ms; CPU ${CPU_TARGET} busy ${fmt(100 * targetBusy(r), 0)}%, CPU ${CPU_REST} ${fmt(100 * restBusy(r), 0)}%`);
  console.log(`MCP gateway RSS after the load: ${fmt(rss, 1)} MiB`);
  for (const r of [mcpDirect, mcpGateway].filter((x) => x.bad > 0 || x.errors > 0)) notes.push(`${r.name}: ${r.bad} non-2xx and ${r.errors} errors/timeouts during the measurement`);
  console.log('\n| target check | verdict | measured |');
  console.log('|---|---|---|');
  for (const [what, ok, measured] of mcpChecks(mcpDirect, mcpGateway)) console.log(`| ${what} | ${ok ? 'PASS' : 'MISS'} | ${measured} |`);
  if (notes.length) console.log(`\nnotes:\n${notes.map((n) => `- ${n}`).join('\n')}`);
  console.log(`\nload average at the end: ${loadavg().map((l) => l.toFixed(2)).join(' ')} (other work on the machine skews the results)`);
  return 0;
}

/**
 * BENCH_ONLY=failover (issue 11 item 3, about 40 s): two upstreams behind one route, one killed under load. Per
 * route (outlierDetection alone, then with a retry): c=CONNECTIONS for 2 s with both up, then the second upstream
 * is killed as the next phase starts (the kill phase, 3 s), then 5 s while it stays ejected; failed requests and
 * p99 of each phase.
 */
async function failoverOnly(notes: string[]): Promise<number> {
  const routes = [
    { name: 'failover', policies: { outlierDetection: { consecutiveGatewayFailure: 5, baseEjectionTime: '60s' } } },
    { name: 'failover-retry', policies: { outlierDetection: { consecutiveGatewayFailure: 5, baseEjectionTime: '60s' }, retry: { attempts: 1, codes: [] } } },
  ];
  const checks: [string, boolean, string][] = [];
  for (const r of routes) {
    const ports = [await freePort(), await freePort()];
    const ups = ports.map((p, i) => startPinned(`upstream ${i}`, CPU_REST, NODE, [join(HERE, 'upstream.ts'), String(p)]));
    await Promise.all(ups.map((u) => listening(u)));
    const gwPorts = await adminPorts();
    const gwPort = await freePort();
    const file = join(work, `${r.name}.yaml`);
    const route = { name: r.name, policies: r.policies, backends: ports.map((p) => ({ host: `127.0.0.1:${p}` })) };
    writeFileSync(file, stringify({ config: staticBlock(gwPorts), binds: [{ port: gwPort, listeners: [{ name: 'bench', routes: [route] }] }] }));
    const gateway = startPinned('switchyard', CPU_TARGET, NODE, [CLI, '-f', file], 'ignore');
    await waitFor200(`http://127.0.0.1:${gwPorts.readiness}/healthz/ready`, gateway, performance.now());
    const url = `http://127.0.0.1:${gwPort}/`;
    const pids = processTree(gateway.proc.pid!);
    const job = (throughputS: number, warmupS: number, latencyS = 0): Job => ({ url, warmupS, connections: CONNECTIONS, throughputS, latencyS, cpuPids: pids });
    const results = await load([job(2, WARMUP_S), job(3, 0), job(5, 0, LATENCY_S)], (res) => {
      if (res.index === 0) void stop(ups[1]!);
    });
    const failed = (ph: JobResult['throughput']) => ph.non2xx + ph.errors;
    // Which kind of failure (an answer other than 2xx, or a connection error/timeout): a run in which every request
    // failed after the kill was seen intermittently on 2026-11-26 (docs/backends-health.md "Measured").
    const kinds = (ph: JobResult['throughput']) => `${ph.non2xx} non-2xx + ${ph.errors} errors`;
    const [both, kill, ejected] = results as [JobResult, JobResult, JobResult];
    console.log(
      `${r.name}: both up ${failed(both.throughput)}/${both.throughput.requests} failed, p99 ${fmt(both.throughput.p99, 0)} ms; ` +
        `kill phase ${failed(kill.throughput)}/${kill.throughput.requests} failed (${kinds(kill.throughput)}), p99 ${fmt(kill.throughput.p99, 0)} ms; ` +
        `ejected ${failed(ejected.throughput)}/${ejected.throughput.requests} failed, p99 ${fmt(ejected.throughput.p99, 0)} ms at c=${CONNECTIONS}` +
        (ejected.latency ? `, p99 ${fmt(ejected.latency.p99, 3)} ms at c=1 (${failed(ejected.latency)} failed)` : ''),
    );
    // Which backends were ejected (/metrics): the killed one, never the live one (docs/backends-health.md "Measured").
    const metrics = (await get(`http://127.0.0.1:${gwPorts.stats}/metrics`)).body;
    const out = [...metrics.matchAll(/switchyard_backend_ejections_total\{[^}]*backend="([^"]+)"[^}]*\} (\d+)/g)].map((m) => `${m[1]} ×${m[2]}`);
    const killedLabel = `127.0.0.1:${ports[1]}`;
    console.log(`${r.name}: ejected ${out.length ? out.join(', ') : 'none'} (killed: ${killedLabel})`);
    checks.push([`${r.name}: the killed backend is ejected, the live one is not`, out.length === 1 && out[0]!.startsWith(`${killedLabel} `), out.join(', ') || 'none']);
    const afterKill = failed(kill.throughput) + failed(ejected.throughput) + (ejected.latency ? failed(ejected.latency) : 0);
    const afterTotal = kill.throughput.requests + ejected.throughput.requests + (ejected.latency?.requests ?? 0);
    const ejectedFailed = failed(ejected.throughput) + (ejected.latency ? failed(ejected.latency) : 0);
    if (r.policies.retry) checks.push([`${r.name}: no failed request once a backend is killed (retry on the other)`, afterKill === 0, `${afterKill} of ${afterTotal}`]);
    else checks.push([`${r.name}: ≤ 1% failed requests after the first ejection`, ejectedFailed <= 0.01 * ejected.throughput.requests, `${ejectedFailed} of ${ejected.throughput.requests + (ejected.latency?.requests ?? 0)} while ejected; ${failed(kill.throughput)} of ${kill.throughput.requests} in the kill phase`]);
    await stop(gateway);
    await Promise.all(ups.map((u) => stop(u)));
  }
  console.log('\n| target check | verdict | measured |');
  console.log('|---|---|---|');
  for (const [what, ok, measured] of checks) console.log(`| ${what} | ${ok ? 'PASS' : 'MISS'} | ${measured} |`);
  if (notes.length) console.log(`\nnotes:\n${notes.map((n) => `- ${n}`).join('\n')}`);
  console.log(`\nload average at the end: ${loadavg().map((l) => l.toFixed(2)).join(' ')} (other work on the machine skews the results)`);
  return 0;
}

/**
 * BENCH_ONLY=workers: the plain route with `config.workers: 2` against `workers: 1` and the bare proxy (one core by
 * construction). Nothing is pinned except the load generator (CPU 1 when `taskset` is there, as in every row): a
 * gateway with two workers must be free to use both CPUs, so it shares them with the upstream and the load
 * generator, and raw req/s understates what two dedicated cores give. So two figures: the measured req/s ratio
 * (load generator and upstream on the same two cores), and the projection to dedicated cores from the gateway's
 * CPU per request (`workers: 1` can use one core, `workers: 2` two: 2 × CPU/req(1) / CPU/req(2)). Idle RSS of 1,
 * 2 and 3 workers gives the cost of each extra worker.
 */
async function workersOnly(notes: string[]): Promise<number> {
  const upPort = await freePort();
  const upstream = start('upstream', NODE, [join(HERE, 'upstream.ts'), String(upPort)]);
  await listening(upstream);
  const bareP = await freePort();
  const bare = start('bare proxy', NODE, [join(HERE, 'bare-proxy.ts'), String(bareP), String(upPort)]);
  await listening(bare);
  const idle: Record<number, number> = {};
  const gateways: { n: number; child: Child; port: number }[] = [];
  for (const n of [1, 2, 3]) {
    const ports = await adminPorts();
    const port = await freePort();
    const file = join(work, `workers-${n}.yaml`);
    const route = { name: 'plain', backends: [{ host: `127.0.0.1:${upPort}` }] };
    writeFileSync(file, stringify({ config: { ...staticBlock(ports), workers: n, logging: { accessLog: false } }, binds: [{ port, listeners: [{ name: 'bench', routes: [route] }] }] }));
    const child = start(`switchyard workers:${n}`, NODE, [CLI, '-f', file], 'ignore');
    await waitFor200(`http://127.0.0.1:${ports.readiness}/healthz/ready`, child, performance.now(), 60_000);
    for (let i = 0; i < 20; i++) await fetch(`http://127.0.0.1:${port}/`).then((r) => r.arrayBuffer());
    await new Promise((r) => setTimeout(r, 3000));
    idle[n] = rssMiB(child.proc.pid!);
    if (n === 3) await stop(child);
    else gateways.push({ n, child, port });
  }
  console.log(`placement: gateways, bare proxy and upstream unpinned (the OS spreads them over both CPUs); the load generator ${TASKSET ? `pinned to CPU ${CPU_REST}` : 'unpinned'}`);
  const side = processTree(upstream.proc.pid!);
  const rows = [makeRow('bare proxy (1 core)', `http://127.0.0.1:${bareP}/`, bare), ...gateways.map((g) => makeRow(`switchyard workers: ${g.n}`, `http://127.0.0.1:${g.port}/`, g.child))];
  for (const r of rows) r.sidePids = side;
  await measure(rows);
  console.log('\n| target | req/s (median, rounds spread) | gateway CPU µs/req | upstream CPU µs/req | load generator CPU µs/req | c=1 p50 / p99 ms | idle RSS MiB |');
  console.log('|---|---|---|---|---|---|---|');
  for (const [i, r] of rows.entries()) {
    const rss = i === 0 ? 'n/a' : fmt(idle[gateways[i - 1]!.n]!, 0);
    console.log(`| ${r.name} | ${fmt(rps(r), 0)} ${spread(r)} | ${fmt(cpuPerReq(r), 0)} | ${fmt(median(r.sideCpu), 0)} | ${fmt(median(r.loadCpu), 0)} | ${fmt(p50(r), 3)} / ${fmt(p99(r), 3)} | ${rss} |`);
  }
  const [bareRow, one, two] = rows as [Row, Row, Row];
  const measured = rps(two) / rps(one);
  const projected = (2 * cpuPerReq(one)) / cpuPerReq(two);
  console.log(`\nidle RSS: workers 1 ${fmt(idle[1]!, 0)} MiB, 2 ${fmt(idle[2]!, 0)} MiB, 3 ${fmt(idle[3]!, 0)} MiB: the third worker adds ${fmt(idle[3]! - idle[2]!, 0)} MiB; going from 1 to 2 adds ${fmt(idle[2]! - idle[1]!, 0)} MiB (a worker and the supervisor thread)`);
  console.log('\n| target check | verdict | measured |');
  console.log('|---|---|---|');
  // Two cores shared by the gateway, the upstream and the load generator: the most `workers: 2` can do is 2 cores /
  // (gateway + upstream + load generator CPU per request); the ceiling is printed beside the measured figure.
  const ceiling = 2e6 / (cpuPerReq(two) + median(two.sideCpu) + median(two.loadCpu));
  console.log(
    `| workers: 2 ≥ 1.7× the req/s of workers: 1 | ${measured >= 1.7 ? 'PASS' : projected >= 1.7 ? 'MISS measured, PASS projected' : 'MISS'} | ${fmt(measured)}× measured (load generator and upstream on the same 2 CPUs: ` +
      `ceiling ${fmt(ceiling, 0)} req/s for workers: 2 at these CPU costs); ${fmt(projected)}× projected to 2 dedicated cores from the gateway's CPU per request; workers: 1 is ${fmt(rps(one) / rps(bareRow))}× the bare proxy |`,
  );
  console.log(`| idle RSS per extra worker ≤ 60 MiB | ${idle[3]! - idle[2]! <= 60 ? 'PASS' : 'MISS'} | ${fmt(idle[3]! - idle[2]!, 0)} MiB (third worker) |`);
  for (const g of gateways) await stop(g.child);
  await stop(bare);
  await stop(upstream);
  if (notes.length) console.log(`\nnotes:\n${notes.map((n) => `- ${n}`).join('\n')}`);
  console.log(`\nload average at the end: ${loadavg().map((l) => l.toFixed(2)).join(' ')} (other work on the machine skews the results)`);
  return 0;
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
  // Generous: on a busy machine the phases overrun their seconds (autocannon waits for answers in flight).
  const timer = setTimeout(() => void stop(child), (seconds * 1.5 + 20) * 1000);
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
  readonly method?: string;
  readonly body?: string;
  readonly uniqueIds?: boolean;
  /** The MCP rows: compared with the MCP upstream hit directly, not with the HTTP rows. */
  readonly mcp?: boolean;
  /** Per round: 2xx/s at c=CONNECTIONS, and p50/p99 (ms) at c=1. */
  readonly rps: number[];
  readonly p50: number[];
  readonly p99: number[];
  /** Per round: CPU µs the serving processes spent per request at c=CONNECTIONS. */
  readonly cpu: number[];
  /** Per round: CPU µs per request of the upstream behind the target (MCP rows), at c=CONNECTIONS. */
  readonly sideCpu: number[];
  /** Per round: CPU µs of the load generator per request at c=CONNECTIONS. */
  readonly loadCpu: number[];
  pids: number[];
  sidePids?: number[];
  bad: number;
  errors: number;
}

function makeRow(name: string, url: string, server: Child, headers?: Record<string, string>, mcp?: boolean): Row {
  return {
    name,
    url,
    headers,
    ...(mcp ? { method: 'POST', body: MCP_CALL, uniqueIds: true, mcp: true } : {}),
    rps: [],
    p50: [],
    p99: [],
    cpu: [],
    sideCpu: [],
    loadCpu: [],
    pids: processTree(server.proc.pid!),
    bad: 0,
    errors: 0,
  };
}

/** Load every row in ROUNDS interleaved rounds (one load-generator process) and record the results in the rows. */
async function measure(rows: readonly Row[]): Promise<void> {
  const jobs: Job[] = [];
  const jobRows: Row[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    for (const r of rows) {
      jobs.push({
        url: r.url,
        headers: r.headers,
        method: r.method,
        body: r.body,
        uniqueIds: r.uniqueIds,
        warmupS: round === 0 ? WARMUP_S : 0.3,
        connections: CONNECTIONS,
        throughputS: THROUGHPUT_S / ROUNDS,
        latencyS: LATENCY_S / ROUNDS,
        cpuPids: r.pids,
        sideCpuPids: r.sidePids,
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
    r.sideCpu.push(res.throughput.sideCpuUsPerReq);
    r.loadCpu.push(res.throughput.loadCpuUsPerReq);
    for (const ph of [res.throughput, res.latency]) {
      if (!ph) continue;
      r.bad += ph.requests - ph.ok;
      r.errors += ph.errors + ph.timeouts;
    }
    const round = Math.floor(res.index / rows.length) + 1;
    console.log(
      `round ${round}/${ROUNDS} ${r.name}: ${fmt(res.throughput.rps, 0)} req/s, ${fmt(res.throughput.cpuUsPerReq, 0)} CPU µs/req, c=1 p50 ${fmt(res.latency?.p50 ?? NaN, 3)} p99 ${fmt(res.latency?.p99 ?? NaN, 3)} ms`,
    );
  });
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

/**
 * On one pinned core, throughput is about 1 / CPU per request. When other work on the machine scatters the
 * throughput rounds, the CPU ratio is the steadier estimate, so the verdict uses it and says so.
 */
function throughputVerdict(what: string, r: Row, min: number, base: Row, cpuBecause?: string): [string, boolean, string] {
  const byRps = rps(r) / rps(base);
  const byCpu = cpuPerReq(base) / cpuPerReq(r);
  const scatter = Math.max(spreadPct(r), spreadPct(base));
  const why = !Number.isFinite(byCpu) ? undefined : cpuBecause ?? (scatter > NOISY_SPREAD ? `throughput rounds were up to ±${fmt(scatter, 0)}% apart` : undefined);
  const basis = why ? byCpu : byRps;
  return [what, basis >= min, `${fmt(byRps)}× by throughput, ${fmt(byCpu)}× by CPU per request` + (why ? ` (verdict by CPU: ${why})` : '')];
}

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

/** Routes of the big-config row: what `--validate-only` does with them must stay linear (issue 14 item 8). */
const BIG_ROUTES = Math.round(num('BENCH_BIG_ROUTES', 100_000));

/**
 * A config of BIG_ROUTES routes (the 1,000-route mix, repeated) loaded as `--validate-only` loads it: read nothing,
 * parse, expand, validate and compile once in a fresh gateway (registry and validator included). Also 1/10 of it,
 * so the report shows whether the time grows linearly.
 */
async function bigConfigBench(): Promise<{ routes: number; bytes: number; ms: number; cpuMs: number; tenthMs: number; tenthCpuMs: number }> {
  const once = async (count: number): Promise<{ bytes: number; ms: number; cpuMs: number }> => {
    const text = manyRoutesConfig({ admin: 1, stats: 2, readiness: 3 }, 8080, 9, 0, count);
    const gateway = createGateway(
      { preset: fullPreset, knownKeys: FIRST_PARTY_KEYS, config: { name: `bench-${count}-routes.yaml`, text }, watch: false },
      new LogSink(() => undefined),
    );
    const cpu0 = process.cpuUsage();
    const t = performance.now();
    const snapshot = await gateway.compile(text);
    const ms = performance.now() - t;
    const cpu = process.cpuUsage(cpu0);
    snapshot.dispose();
    await gateway.stop().catch(() => undefined);
    return { bytes: Buffer.byteLength(text), ms, cpuMs: (cpu.user + cpu.system) / 1000 };
  };
  const tenth = await once(Math.round(BIG_ROUTES / 10));
  const full = await once(BIG_ROUTES);
  return { routes: BIG_ROUTES, bytes: full.bytes, ms: full.ms, cpuMs: full.cpuMs, tenthMs: tenth.ms, tenthCpuMs: tenth.cpuMs };
}

function bigConfigLine(big: Awaited<ReturnType<typeof bigConfigBench>>): string {
  return (
    `load ${big.routes} routes (${fmt(big.bytes / 1024 / 1024, 1)} MiB of YAML, as --validate-only): ${fmt(big.ms, 0)} ms (CPU ${fmt(big.cpuMs, 0)} ms); ` +
    `${big.routes / 10} routes: ${fmt(big.tenthMs, 0)} ms (CPU ${fmt(big.tenthCpuMs, 0)} ms; ×${fmt(big.cpuMs / big.tenthCpuMs, 1)} CPU for ×10 routes)`
  );
}

/** BENCH_ONLY=routes: the big-config row alone. */
async function routesOnly(): Promise<number> {
  const big = await bigConfigBench();
  console.log(bigConfigLine(big));
  console.log(`\n| target check | verdict | measured |\n|---|---|---|\n| ${big.routes} routes load ≤ 10 s | ${big.ms <= 10_000 ? 'PASS' : 'MISS'} | ${fmt(big.ms, 0)} ms |`);
  return 0;
}

const QUICKSTART_PORTS = [3000, 3001, 15000, 15020, 15021];

async function quickstartBench(): Promise<{ readyMs: number; runsMs: number[]; rssMiB: number } | string> {
  // A copy of examples/quickstart.yaml on free ports, the rest unchanged: another gateway on the machine (other
  // sessions run the quickstart too) could otherwise take a port between a check and the spawn and answer the
  // readiness probe in its place.
  const map = new Map<number, number>();
  for (const port of QUICKSTART_PORTS) map.set(port, await freePort());
  const text = readFileSync(join(ROOT, 'examples/quickstart.yaml'), 'utf8').replace(/\b(3000|3001|15000|15020|15021)\b/g, (m) => String(map.get(Number(m))));
  const file = join(work, 'quickstart.yaml');
  writeFileSync(file, text);
  const runsMs: number[] = [];
  let rss = NaN;
  for (let i = 0; i < 3; i++) {
    const t0 = performance.now();
    const gw = start('switchyard quickstart', NODE, [CLI, '-f', file], 'ignore');
    try {
      runsMs.push(await waitFor200(`http://127.0.0.1:${map.get(15021)}/healthz/ready`, gw, t0));
      if (i === 2) {
        const hello = await get(`http://127.0.0.1:${map.get(3000)}/hello`);
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
  return `${nginxHead(dir)}
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

/**
 * BENCH_ONLY=policies (issue 15 item 4, about 60 s; 100 s with a baseline): the bare proxy and the plain, policies
 * and jwt routes of the full bench (same configs, same headers), nothing else. With BENCH_POLICIES_BASELINE=<dir>,
 * another checkout's gateway serves the same three routes in a second process, and its rows interleave with this
 * one's. Prints each route's req/s and CPU per request as a ratio to its own gateway's plain route.
 */
async function policiesOnly(notes: string[]): Promise<number> {
  const upstreamPort = await freePort();
  const upstream = startPinned('upstream', CPU_REST, NODE, [join(HERE, 'upstream.ts'), String(upstreamPort)]);
  const barePort = await freePort();
  const bare = startPinned('bare proxy', CPU_TARGET, NODE, [join(HERE, 'bare-proxy.ts'), String(barePort), String(upstreamPort)]);
  await Promise.all([listening(upstream), listening(bare)]);
  const jwt = await jwtSetup(work);
  const gateway = async (label: string, cli: string, args: string[]): Promise<{ child: Child; port: number }> => {
    const ports = await adminPorts();
    const port = await freePort();
    const file = join(work, `policies-${label}.yaml`);
    writeFileSync(file, benchConfig(ports, port, upstreamPort, true, jwt.jwksFile));
    const child = startPinned(`switchyard (${label})`, CPU_TARGET, NODE, [...args, cli, '-f', file], 'ignore');
    // Generous: on a loaded machine a gateway took over 15 s to start.
    await waitFor200(`http://127.0.0.1:${ports.readiness}/healthz/ready`, child, performance.now(), 60_000);
    return { child, port };
  };
  const gateways = [{ label: 'this', ...(await gateway('this', CLI, POLICIES_NODE_ARGS)) }];
  if (POLICIES_BASELINE) gateways.push({ label: 'baseline', ...(await gateway('baseline', join(POLICIES_BASELINE, 'bin/switchyard.js'), [])) });
  const bareRow = makeRow('bare undici proxy', `http://127.0.0.1:${barePort}/plain`, bare);
  const rows: Row[] = [bareRow];
  const groups: [Row, Row, Row][] = [];
  for (const g of gateways) {
    const suffix = g.label === 'this' ? '' : ` (${POLICIES_BASELINE})`;
    const base = `http://127.0.0.1:${g.port}`;
    const group: [Row, Row, Row] = [
      makeRow(`switchyard plain${suffix}`, `${base}/plain`, g.child),
      makeRow(`switchyard policies${suffix}`, `${base}/policies`, g.child, { origin: 'https://bench.example' }),
      makeRow(`switchyard jwt${suffix}`, `${base}/jwt`, g.child, { authorization: `Bearer ${jwt.token}` }),
    ];
    for (const r of group) {
      const res = await get(r.url, r.headers);
      if (res.status !== 200 || !res.body.includes('bench-upstream')) throw new Error(`${r.name} answered ${res.status}: ${res.body.slice(0, 200)}`);
    }
    const none = await get(group[2].url);
    const other = await get(group[2].url, { authorization: `Bearer ${jwt.otherToken}` });
    if (none.status !== 401 || other.status !== 403) throw new Error(`jwt route: no token answered ${none.status} (want 401), another subject ${other.status} (want 403)`);
    groups.push(group);
    rows.push(...group);
  }
  // The upstream's CPU too: with the load generator it shares CPU_REST, and a row that saturates it measures that CPU.
  const side = processTree(upstream.proc.pid!);
  for (const r of rows) r.sidePids = side;
  await measure(rows);
  await stopAll();
  printRows(rows, () => bareRow, bareRow);
  console.log('\npolicies route: requestHeaderModifier + responseHeaderModifier + cors + localRateLimit; jwt route: jwtAuth (strict, RS256, JWKS file) + authorization (2 CEL require rules) + localRateLimit');
  console.log('\n| gateway | policies / plain req/s | policies / plain by CPU | jwt / plain req/s | jwt / plain by CPU | CPU µs/req plain, policies, jwt (rounds) |');
  console.log('|---|---:|---:|---:|---:|---|');
  for (const [plain, policies, jwtRow] of groups) {
    const rounds = (r: Row): string => r.cpu.map((v) => fmt(v, 0)).join('/');
    console.log(
      `| ${plain.name.replace('switchyard plain', 'switchyard') || 'switchyard'} | ${fmt(rps(policies) / rps(plain))} | ${fmt(cpuPerReq(plain) / cpuPerReq(policies))} | ` +
        `${fmt(rps(jwtRow) / rps(plain))} | ${fmt(cpuPerReq(plain) / cpuPerReq(jwtRow))} | ${rounds(plain)}, ${rounds(policies)}, ${rounds(jwtRow)} |`,
    );
  }
  // Whether a row's req/s measured the gateway: a policies or jwt row sends and receives more header bytes, which the
  // upstream and autocannon on CPU_REST pay for; when that CPU is the busy one, the req/s ratio is theirs, and a gateway
  // waiting on it spends more CPU per request (fewer requests per wake-up).
  console.log(`\n| row | gateway CPU ${CPU_TARGET} busy | upstream CPU µs/req | load generator CPU µs/req | CPU ${CPU_REST} busy |`);
  console.log('|---|---:|---:|---:|---:|');
  for (const r of rows.slice(1)) {
    console.log(`| ${r.name} | ${fmt(100 * targetBusy(r), 0)}% | ${fmt(median(r.sideCpu), 0)} | ${fmt(median(r.loadCpu), 0)} | ${fmt(100 * restBusy(r), 0)}% |`);
    if (restBusy(r) > REST_SATURATED) notes.push(`${r.name}: CPU ${CPU_REST} (upstream + load generator) was ${fmt(100 * restBusy(r), 0)}% busy: its req/s measures that CPU, not the gateway`);
  }
  for (const r of rows.filter((x) => x.bad > 0 || x.errors > 0)) notes.push(`${r.name}: ${r.bad} non-2xx and ${r.errors} errors/timeouts during the measurement`);
  if (notes.length) console.log(`\nnotes:\n${notes.map((n) => `- ${n}`).join('\n')}`);
  console.log(`\nload average at the end: ${loadavg().map((l) => l.toFixed(2)).join(' ')} (other work on the machine skews the results)`);
  return 0;
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

/** What the `peers` scenario (peers.ts) borrows: process tracking, pinning, the load generator. */
const benchKit: BenchKit = {
  root: ROOT,
  node: NODE,
  cli: CLI,
  here: HERE,
  work,
  cpuTarget: CPU_TARGET,
  cpuRest: CPU_REST,
  pinned: TASKSET !== undefined,
  warmupS: WARMUP_S,
  throughputS: THROUGHPUT_S,
  latencyS: LATENCY_S,
  connections: CONNECTIONS,
  rounds: ROUNDS,
  startPinned,
  stop,
  listening,
  waitFor200,
  post,
  load,
  processTree,
  onPath,
  fmt,
  median,
};

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
  if (ONLY === 'mcp') return mcpOnly(notes);
  if (ONLY === 'peers') {
    const code = await peersOnly(benchKit, notes);
    await stopAll();
    if (notes.length) console.log(`\nnotes:\n${notes.map((n) => `- ${n}`).join('\n')}`);
    console.log(`\nload average at the end: ${loadavg().map((l) => l.toFixed(2)).join(' ')} (other work on the machine skews the results)`);
    return code;
  }
  if (ONLY === 'ai') {
    await aiScenario(benchKit, notes);
    await stopAll();
    if (notes.length) console.log(`\nnotes:\n${notes.map((n) => `- ${n}`).join('\n')}`);
    console.log(`\nload average at the end: ${loadavg().map((l) => l.toFixed(2)).join(' ')} (other work on the machine skews the results)`);
    return 0;
  }
  if (ONLY === 'keys') {
    await keysScenario(benchKit, notes);
    await stopAll();
    if (notes.length) console.log(`\nnotes:\n${notes.map((n) => `- ${n}`).join('\n')}`);
    console.log(`\nload average at the end: ${loadavg().map((l) => l.toFixed(2)).join(' ')} (other work on the machine skews the results)`);
    return 0;
  }
  if (ONLY === 'observability') {
    await observabilityScenario(benchKit, notes);
    await stopAll();
    if (notes.length) console.log(`\nnotes:\n${notes.map((n) => `- ${n}`).join('\n')}`);
    console.log(`\nload average at the end: ${loadavg().map((l) => l.toFixed(2)).join(' ')} (other work on the machine skews the results)`);
    return 0;
  }
  if (ONLY === 'failover') return failoverOnly(notes);
  if (ONLY === 'workers') return workersOnly(notes);
  if (ONLY === 'routes') return routesOnly();
  if (ONLY === 'policies') return policiesOnly(notes);
  if (ONLY !== undefined && ONLY !== '') throw new Error(`BENCH_ONLY=${ONLY}: only \`mcp\`, \`peers\`, \`ai\`, \`keys\`, \`observability\`, \`failover\`, \`workers\`, \`policies\` and \`routes\` are known`);

  // 1. Compile 1,000 routes in this process (nothing else runs yet).
  const compile = await compileBench();
  console.log(
    `compile ${compile.routes} routes: ${compile.runsMs.map((ms) => fmt(ms, 0)).join(', ')} ms (median after the first: ${fmt(compile.medianMs, 0)} ms); ` +
      `plugin registry + schema validator, built once before: ${fmt(compile.prepareMs, 0)} ms`,
  );

  // 1b. A big config (100,000 routes by default) loaded once, and a tenth of it.
  const big = await bigConfigBench();
  console.log(bigConfigLine(big));

  // 2. Spawn-to-ready and idle RSS with the quickstart.
  const quick = await quickstartBench();
  if (typeof quick === 'string') console.log(`quickstart: ${quick}`);
  else console.log(`quickstart: readiness 200 at ${quick.runsMs.map((ms) => fmt(ms, 0)).join(', ')} ms after spawn (median ${fmt(quick.readyMs, 0)}); idle RSS ${fmt(quick.rssMiB, 1)} MiB (full preset)`);

  // 3. Targets. Two upstreams: one beside the load generator for the proxies, one on the target CPU for `direct`.
  // The same for the MCP scenario: one SDK server behind the gateway, one on the target CPU for `mcp direct`.
  const upstreamPort = await freePort();
  const upstream = startPinned('upstream', CPU_REST, NODE, [join(HERE, 'upstream.ts'), String(upstreamPort)]);
  const directPort = await freePort();
  const directUpstream = startPinned('upstream (direct row)', CPU_TARGET, NODE, [join(HERE, 'upstream.ts'), String(directPort)]);
  const barePort = await freePort();
  const bare = startPinned('bare proxy', CPU_TARGET, NODE, [join(HERE, 'bare-proxy.ts'), String(barePort), String(upstreamPort)]);
  const mcpUpstreams = await startMcpUpstreams();
  await Promise.all([listening(upstream), listening(directUpstream), listening(bare)]);

  const installed = installedPolicies();
  let extended = installed.has('cors') && installed.has('localRateLimit');
  const jwt = ['jwtAuth', 'authorization', 'localRateLimit'].every((k) => installed.has(k)) ? await jwtSetup(work) : undefined;
  if (!jwt) notes.push('jwt route skipped: jwtAuth, authorization and localRateLimit are not all installed');
  let jwksFile = jwt?.jwksFile;
  const gwPorts = await adminPorts();
  const gwPort = await freePort();
  const configFile = join(work, 'bench.yaml');
  const writeConfig = (): void => writeFileSync(configFile, benchConfig(gwPorts, gwPort, upstreamPort, extended, jwksFile));
  writeConfig();
  if (extended || jwksFile) {
    let problem = validate(configFile);
    if (problem && extended) {
      notes.push(`cors + localRateLimit are installed but the bench config for them was rejected; the policies row ran without them:\n${problem}`);
      extended = false;
      writeConfig();
      problem = validate(configFile);
    }
    if (problem && jwksFile) {
      notes.push(`the jwt route was rejected; its row is skipped:\n${problem}`);
      jwksFile = undefined;
      writeConfig();
    }
  }
  const mcpGatewayConfig = installed.has('mcp') ? await mcpGatewayFile(mcpUpstreams.behindPort, notes) : undefined;
  if (!installed.has('mcp')) notes.push('MCP scenario skipped: the mcp backend is not installed');
  const policyNames = Object.keys(policySet(extended)).join(' + ');
  if (!extended) notes.push(`policies route: ${policyNames} only (cors and localRateLimit join it once they are installed)`);
  // Access log on (the default), written to /dev/null so terminal output does not distort the result.
  const gateway = startPinned('switchyard', CPU_TARGET, NODE, [CLI, '-f', configFile], 'ignore');
  await waitFor200(`http://127.0.0.1:${gwPorts.readiness}/healthz/ready`, gateway, performance.now());
  const mcpGatewayProc = mcpGatewayConfig ? await startMcpGateway(mcpGatewayConfig) : undefined;

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

  const row = makeRow;
  const direct = row('direct upstream', `http://127.0.0.1:${directPort}/plain`, directUpstream);
  const bareRow = row('bare undici proxy', `http://127.0.0.1:${barePort}/plain`, bare);
  const plain = row('switchyard plain', `http://127.0.0.1:${gwPort}/plain`, gateway);
  const policies = row('switchyard policies', `http://127.0.0.1:${gwPort}/policies`, gateway, extended ? { origin: 'https://bench.example' } : undefined);
  const rows = [direct, bareRow, plain, policies];
  const jwtRow = jwt && jwksFile ? row('switchyard jwt', `http://127.0.0.1:${gwPort}/jwt`, gateway, { authorization: `Bearer ${jwt.token}` }) : undefined;
  if (jwtRow) rows.push(jwtRow);
  const nginxRow = nginx ? row('nginx (1 worker)', `http://127.0.0.1:${nginxPort}/plain`, nginx) : undefined;
  if (nginxRow) rows.push(nginxRow);
  // Sanity: each target answers 200 with the upstream's body.
  for (const r of rows) {
    const res = await get(r.url, r.headers);
    if (res.status !== 200 || !res.body.includes('bench-upstream')) throw new Error(`${r.name} answered ${res.status}: ${res.body.slice(0, 200)}`);
  }
  if (jwtRow && jwt) {
    // The policies are at work: no token is 401, a valid token failing a rule is 403.
    const none = await get(jwtRow.url);
    const other = await get(jwtRow.url, { authorization: `Bearer ${jwt.otherToken}` });
    if (none.status !== 401 || other.status !== 403) throw new Error(`jwt route: no token answered ${none.status} (want 401), another subject ${other.status} (want 403)`);
  }

  let mcpDirect: Row | undefined;
  let mcpGateway: Row | undefined;
  if (mcpGatewayProc && mcpGatewayConfig) {
    [mcpDirect, mcpGateway] = await mcpRows(mcpUpstreams, mcpGatewayProc, mcpGatewayConfig.port);
    rows.push(mcpDirect, mcpGateway);
  }

  await measure(rows);
  const gatewayRss = rssMiB(gateway.proc.pid!);
  const mcpGatewayRss = mcpGatewayProc ? rssMiB(mcpGatewayProc.proc.pid!) : NaN;
  await stop(gateway);
  if (mcpGatewayProc) await stop(mcpGatewayProc);
  if (nginx) {
    const workers = nginxRow!.pids.slice(1);
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
  await stop(mcpUpstreams.direct);
  await stop(mcpUpstreams.behind);

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

  // 4b. The `ai` rows (ai.ts): they print their own table.
  console.log('\nai rows:');
  const aiRatio = await aiScenario(benchKit, notes);
  await stopAll();

  // 5. Report.
  // The MCP rows are compared with the MCP upstream hit directly; the others with the HTTP upstream and the bare proxy.
  const baseOf = (r: Row): Row => (r.mcp ? mcpDirect! : direct);
  const addedUs = (r: Row): number => (p50(r) - p50(baseOf(r))) * 1000;
  printRows(rows, baseOf, bareRow);
  if (mcpDirect && mcpGateway) console.log(`\n${mcpNote(mcpDirect, mcpGateway)}`);
  if (jwtRow) console.log('jwt route: jwtAuth (strict, RS256, JWKS file) + authorization (2 CEL require rules) + localRateLimit');
  for (const r of rows.filter((x) => x.bad > 0 || x.errors > 0)) notes.push(`${r.name}: ${r.bad} non-2xx and ${r.errors} errors/timeouts during the measurement`);
  console.log(`\npolicies route: ${policyNames}`);
  console.log(`Switchyard RSS after the load: ${fmt(gatewayRss, 1)} MiB${mcpGatewayProc ? ` (the MCP gateway: ${fmt(mcpGatewayRss, 1)} MiB)` : ''}`);

  const checks: [string, boolean, string][] = [];
  const throughputCheck = (what: string, r: Row, min: number, base: Row = bareRow): void => void checks.push(throughputVerdict(what, r, min, base));
  throughputCheck('plain route throughput ≥ 0.8× bare proxy', plain, 0.8);
  const addedPlain = addedUs(plain);
  const addedBare = addedUs(bareRow);
  checks.push([
    'plain route added p50 (c=1) ≤ 1.3× bare proxy’s',
    addedPlain <= 1.3 * addedBare,
    `+${fmt(addedPlain, 0)} µs vs +${fmt(addedBare, 0)} µs (${fmt(addedPlain / addedBare)}×)`,
  ]);
  throughputCheck('policy route throughput ≥ 0.7× bare proxy', policies, 0.7);
  if (jwtRow) throughputCheck('jwt route (jwtAuth + 2 CEL rules + localRateLimit) throughput ≥ 0.6× bare proxy', jwtRow, 0.6);
  if (mcpDirect && mcpGateway) checks.push(...mcpChecks(mcpDirect, mcpGateway));
  checks.push(['ai route (openAI, non-streamed chat) CPU per request ≤ 1.4× bare proxy’s', aiRatio <= 1.4, `${fmt(aiRatio)}×`]);
  checks.push([
    `${compile.routes} routes compile ≤ 200 ms (median of 3 after a first)`,
    compile.medianMs <= 200,
    `${fmt(compile.medianMs, 0)} ms (first compile in the process ${fmt(compile.firstMs, 0)} ms)`,
  ]);
  checks.push([`${big.routes} routes load ≤ 10 s`, big.ms <= 10_000, `${fmt(big.ms, 0)} ms (${big.routes / 10} routes: ${fmt(big.tenthMs, 0)} ms)`]);
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
  if (!(await acquireLock())) {
    console.log(`# WARNING: another bench (PID ${lockHolder()}) still runs after ${LOCK_WAIT_S} s; running anyway, both results are disturbed\n`);
  }
  armDeadline();
  code = await main();
} catch (err) {
  process.stderr.write(`\nbench failed: ${(err as Error).stack ?? String(err)}\n`);
} finally {
  await stopAll();
  clearTimeout(deadline);
  releaseLock();
  rmSync(work, { recursive: true, force: true });
}
process.exit(code);
