// An A/B of the plain `host` route's CPU per request between checkouts, for a noisy machine (issue 15 item 2;
// docs/perf.md "Plain route CPU, session 6"). Each checkout's CLI serves one `host` route in front of nginx, its
// access log on and written to a file; a load process POSTs the 220-byte chat body over keep-alive connections,
// a fixed number of requests per phase, and the phases of the checkouts are interleaved round by round (order
// alternating). Per phase: the gateway's CPU time (all threads, /proc) per request, and what V8 reported
// (`--trace-gc-nvp`): scavenges, other collections and bytes allocated per request, which do not depend on how busy
// the machine is.
//
// Usage: node test/bench/plain-ab.ts [--rounds 5] [--requests 20000] [--connections 10] [--size small|large|stream]
//          name=/path/to/checkout name2=/path/to/other ...   (the name `bare`: that checkout's bare-proxy.ts)
//        A checkout written `name=/path:ai` serves an `ai` route instead (openAI, hostOverride and pathOverride to
//        the same upstream: the `ai` row's non-streamed chat, docs/perf.md "The ai row, session 7").
//        `--size stream`: the load sends `"stream": true` and the upstream answers the `ai` row's streamed chat (ten
//        SSE chunks and `[DONE]`, text/event-stream): with `:ai`, the streamed chat through the `ai` backend
//        (docs/perf.md "The ai row's streams, session 9").
//        A checkout written `name=/path:policies` serves the `host` route with the bench's policies row's set
//        (header modifiers, cors, localRateLimit; run.ts `policySet`), the load sending an allowed Origin
//        (docs/perf.md "Policies route, session 8").
//        A checkout written `name=/path:keyed` serves the `ai` route with `virtualKeys` on SQLite (one key declared in
//        the config, with its team's and the organisation's budgets: 3 scopes × USD month and tokens day reserved and
//        settled per request), the load presenting the key (docs/perf.md "Virtual keys, session 10").
//        A checkout written `name=/path:jwt` serves the `host` route with the bench's jwt row's set (jwtAuth with an RS256
//        JWKS file, authorization with 2 CEL require rules, localRateLimit; run.ts `jwtPolicies`), the load presenting
//        a token signed for it (docs/perf.md "Session 12, polcost").
//        A checkout written `name=/path:traced` serves the `host` route with `config.tracing` at 100% sampling,
//        OTLP/HTTP to otlp-sink.ts (on the load's CPU): the observability row's traced gateway (issue 12).
//        (the load process itself: node test/bench/plain-ab.ts --load URL REQUESTS CONNECTIONS [ORIGIN|-] [AUTHORIZATION])
//        PLAIN_AB_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof": more node flags for every gateway (a profile each)
//        A checkout written `name=/path+semi=4` runs that gateway with `--max-semi-space-size=4` instead of the CLI's, and
//        `name=/path+v8=--flag,--other` with more V8 flags (docs/perf.md "Memory, session 9 (rss15)").
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { closeSync, mkdtempSync, mkdirSync, openSync, readFileSync, readSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { stringify } from 'yaml';
import { Pool } from 'undici';
import { freePort } from '../helpers/ports.ts';
import { NODE_ENV_DEFAULTS, NODE_FLAGS } from '../../bin/node-flags.js';
import { nginxHead } from './nginx.ts';
import { CHAT_REQUEST, CHAT_STREAM_REQUEST, LARGE_ANSWER, LARGE_PATH, SMALL_ANSWER, SMALL_PATH, STREAM_ANSWER } from './llm-bodies.ts';

/** The CLI's semi-space cap, MiB (bin/node-flags.js): every gateway gets it unless its checkout says `+semi=N`. */
const CLI_SEMI = NODE_FLAGS.find((f) => f.startsWith('--max-semi-space-size='))!.split('=')[1]!;

/** The path of `--size stream` (nginx answers it with the streamed chat). */
const STREAM_PATH = '/stream/v1/chat/completions';

const HEADERS = { 'content-type': 'application/json' };

/** The bench's policies row (run.ts `policySet(true)`): header modifiers, cors and a localRateLimit that never trips. */
const BENCH_ORIGIN = 'https://bench.example';
const POLICIES = {
  requestHeaderModifier: { add: { 'x-bench': 'policies' }, set: { 'x-bench-route': 'policies' }, remove: ['x-remove-me'] },
  responseHeaderModifier: { set: { 'x-served-by': 'switchyard' }, remove: ['x-powered-by'] },
  cors: { allowOrigins: [BENCH_ORIGIN], allowMethods: ['GET', 'POST'], allowHeaders: ['content-type', 'authorization'], exposeHeaders: ['x-served-by'], maxAge: '600s' },
  localRateLimit: [{ maxTokens: 1_000_000_000, tokensPerFill: 1_000_000_000, fillInterval: '1s' }],
};

/** The `:jwt` gateways' issuer and audience (the bench's jwt row, run.ts `jwtPolicies`). */
const JWT_ISSUER = 'https://issuer.bench.example';
const JWT_AUDIENCE = 'switchyard-bench';
const jwtPolicies = (jwksFile: string): Record<string, unknown> => ({
  jwtAuth: { mode: 'strict', issuer: JWT_ISSUER, audiences: [JWT_AUDIENCE], jwks: { file: jwksFile } },
  authorization: { rules: [{ require: 'jwt.sub == "bench-user"' }, { require: '"bench" in jwt.groups' }] },
  localRateLimit: [{ maxTokens: 1_000_000_000, tokensPerFill: 1_000_000_000, fillInterval: '1s' }],
});

/** A JWKS file in `dir` and a token the `:jwt` route accepts. */
async function jwtSetup(dir: string): Promise<{ jwksFile: string; token: string }> {
  const { publicKey, privateKey } = await generateKeyPair('RS256');
  const jwksFile = join(dir, 'jwks.json');
  writeFileSync(jwksFile, JSON.stringify({ keys: [{ ...(await exportJWK(publicKey)), kid: 'bench-key', alg: 'RS256', use: 'sig' }] }));
  const token = await new SignJWT({ groups: ['bench', 'staff'] })
    .setProtectedHeader({ alg: 'RS256', kid: 'bench-key', typ: 'JWT' })
    .setIssuer(JWT_ISSUER)
    .setAudience(JWT_AUDIENCE)
    .setSubject('bench-user')
    .setIssuedAt()
    .setExpirationTime('1h')
    .sign(privateKey);
  return { jwksFile, token };
}

/** The `:keyed` gateways' key (declared in their config) and its budgets, never reached. */
const BENCH_KEY = 'sk-bench-plain-ab-0123456789abcdef';
const BIG_BUDGETS = [{ usd: 1e9, period: 'month' }, { tokens: 1e12, period: 'day' }];

/** The load process: `requests` POSTs keeping `connections` in flight; prints `{ ms, bad }`. */
async function load(url: string, requests: number, connections: number, origin: string | undefined, authorization: string | undefined): Promise<void> {
  const u = new URL(url);
  // PLAIN_AB_GET=1: GETs without a body, as `npm run bench`'s autocannon rows send.
  const get = process.env.PLAIN_AB_GET === '1';
  const body = get ? undefined : u.pathname === STREAM_PATH ? CHAT_STREAM_REQUEST : CHAT_REQUEST;
  const headers: Record<string, string> = { ...(get ? {} : HEADERS), ...(origin && origin !== '-' ? { origin } : {}), ...(authorization ? { authorization } : {}) };
  const pool = new Pool(u.origin, { connections, pipelining: 1 });
  let sent = 0;
  let bad = 0;
  const t0 = performance.now();
  const worker = async (): Promise<void> => {
    while (sent < requests) {
      sent++;
      const res = await pool.request({ path: u.pathname, method: get ? 'GET' : 'POST', headers, body });
      if (res.statusCode !== 200) bad++;
      await res.body.dump({ limit: Infinity });
    }
  };
  await Promise.all(Array.from({ length: connections }, worker));
  process.stdout.write(`${JSON.stringify({ ms: performance.now() - t0, bad })}\n`);
  await pool.close();
}

function argValue(args: string[], name: string, fallback: string): string {
  const i = args.indexOf(name);
  return i === -1 ? fallback : args[i + 1]!;
}

/** utime + stime of every thread of `pid`, µs. */
function cpuUs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1e6) / 100; // USER_HZ is 100 on Linux
}

interface Gateway {
  readonly name: string;
  readonly child: ChildProcess;
  readonly url: string;
  /** The Origin the load sends (`:policies`). */
  readonly origin?: string | undefined;
  /** The Authorization the load sends (`:keyed`). */
  readonly authorization?: string | undefined;
  readonly out: string;
  offset: number;
  readonly cpu: number[];
  readonly scavenges: number[];
  /** GC pauses of the main thread per request, µs (V8's own clock: less noisy than CPU time on a shared machine). */
  readonly gcUs: number[];
  /** Bytes promoted to the old generation per request (what later mark-compacts pay for), load-independent. */
  readonly promotedB: number[];
  readonly markCompacts: number[];
  readonly allocKiB: number[];
  readonly rps: number[];
  /** VmRSS at the end of each phase. */
  readonly rssMiB: number[];
}

/** VmRSS of `pid`, MiB. */
function rssMiB(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}

/**
 * Scavenges, other collections, bytes allocated between them, bytes promoted to the old generation and the main
 * thread's pauses for the collections (ms), from the gateway's `--trace-gc-nvp` lines since the last call.
 */
function gcSince(g: Gateway): { scavenges: number; markCompacts: number; allocated: number; pauseMs: number; promoted: number } {
  const size = statSync(g.out).size;
  const fd = openSync(g.out, 'r');
  const buf = Buffer.alloc(size - g.offset);
  readSync(fd, buf, 0, buf.length, g.offset);
  closeSync(fd);
  const text = buf.toString('latin1');
  const end = text.lastIndexOf('\n') + 1;
  g.offset += end;
  const head = text.slice(0, end);
  let scavenges = 0;
  let markCompacts = 0;
  let allocated = 0;
  let pauseMs = 0;
  let promoted = 0;
  for (const m of head.matchAll(/pause=([\d.]+) .* gc=(\w+) .* allocated=(\d+) promoted=(\d+) /g)) {
    pauseMs += Number(m[1]);
    if (m[2] === 's') scavenges++;
    else markCompacts++;
    allocated += Number(m[3]);
    promoted += Number(m[4]);
  }
  return { scavenges, markCompacts, allocated, pauseMs, promoted };
}

function start(name: string, cpus: string, command: string, args: string[], stdout: number | 'ignore' | 'pipe', children: ChildProcess[], env: NodeJS.ProcessEnv = { ...NODE_ENV_DEFAULTS, ...process.env }): ChildProcess {
  const child = spawn('taskset', ['-c', cpus, command, ...args], { stdio: ['ignore', stdout, 'inherit'], env });
  child.on('error', (err) => console.error(`${name}: ${err.message}`));
  children.push(child);
  return child;
}

async function waitFor200(url: string, timeoutMs = 20_000): Promise<void> {
  const until = performance.now() + timeoutMs;
  for (;;) {
    try {
      const res = await fetch(url);
      await res.arrayBuffer();
      if (res.status === 200) return;
    } catch {
      // not up yet
    }
    if (performance.now() > until) throw new Error(`${url} not ready`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function runLoad(url: string, requests: number, connections: number, origin?: string, authorization?: string): Promise<{ ms: number; bad: number }> {
  const extra = authorization ? [origin ?? '-', authorization] : origin ? [origin] : [];
  const child = spawn('taskset', ['-c', '1', process.execPath, import.meta.filename, '--load', url, String(requests), String(connections), ...extra], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  await new Promise((resolve) => child.on('close', resolve));
  return JSON.parse(out) as { ms: number; bad: number };
}

const fmt = (n: number, digits = 0): string => (Number.isFinite(n) ? n.toFixed(digits) : '-');
const range = (v: number[], digits = 0): string =>
  `${fmt(Math.min(...v), digits)}-${fmt(Math.max(...v), digits)} (median ${fmt([...v].sort((a, b) => a - b)[Math.floor(v.length / 2)]!, digits)})`;

async function main(args: string[]): Promise<void> {
  if (args[0] === '--load') return load(args[1]!, Number(args[2]), Number(args[3]), args[4], args[5]);
  const rounds = Number(argValue(args, '--rounds', '5'));
  const requests = Number(argValue(args, '--requests', '20000'));
  const connections = Number(argValue(args, '--connections', '10'));
  const size = argValue(args, '--size', 'small');
  const checkouts = args.filter((a) => a.includes('=') && !a.startsWith('--')).map((a) => [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)] as [string, string]);
  const keyed = (checkout: string): boolean => checkout.endsWith(':keyed');
  const aiRoute = (checkout: string): boolean => checkout.endsWith(':ai') || keyed(checkout);
  const traced = (checkout: string): boolean => checkout.endsWith(':traced');
  const withPolicies = (checkout: string): boolean => checkout.endsWith(':policies');
  const withJwt = (checkout: string): boolean => checkout.endsWith(':jwt');
  const envOf = (checkout: string): NodeJS.ProcessEnv => {
    const env: NodeJS.ProcessEnv = { ...NODE_ENV_DEFAULTS, ...process.env };
    const mmap = mmapOf(checkout);
    if (mmap === 'unset') delete env.MALLOC_MMAP_THRESHOLD_;
    else if (mmap !== undefined) env.MALLOC_MMAP_THRESHOLD_ = mmap;
    return env;
  };
  // `:w2`: `config.workers: 2` on both CPUs (the workers row's gateway); `+mmap=V` after it: MALLOC_MMAP_THRESHOLD_=V
  // for that gateway (`+mmap=unset`: glibc's dynamic threshold), e.g. `main=/path:w2+mmap=unset` (docs/perf.md
  // "Workers, session 7b").
  const mmapOf = (checkout: string): string | undefined => /\+mmap=(\w+)(\+|$)/.exec(checkout)?.[1];
  // `+semi=N` (before or after `+mmap=`): that gateway's `--max-semi-space-size=N` instead of the CLI's (bin/node-flags.js;
  // docs/perf.md "Memory, session 9 (rss15)"); `+v8=--flag` more V8 flags for that gateway only (no spaces; `,` between flags).
  const semiOf = (checkout: string): string => /\+semi=(\d+)(\+|$)/.exec(checkout)?.[1] ?? CLI_SEMI;
  const v8Of = (checkout: string): string[] => (/\+v8=([^+]+)(\+|$)/.exec(checkout)?.[1] ?? '').split(',').filter(Boolean);
  const workersOf = (checkout: string): number => (/:w2(\+|$)/.test(checkout) ? 2 : 1);
  const rootOf = (checkout: string): string => checkout.replace(/(\+(mmap|semi|v8)=[^+]+)+$/, '').replace(/:(ai|traced|w2|policies|keyed|jwt)$/, '');
  if (checkouts.length === 0) throw new Error('name=/path/to/checkout, at least one');
  const dir = mkdtempSync(join(tmpdir(), 'plain-ab-'));
  const children: ChildProcess[] = [];
  const stopAll = (): void => {
    for (const c of children) if (c.exitCode === null && c.pid !== undefined) c.kill('SIGTERM');
  };
  process.on('SIGINT', () => {
    stopAll();
    process.exit(1);
  });
  try {
    const upstreamPort = await freePort();
    mkdirSync(join(dir, 'www'), { recursive: true });
    writeFileSync(join(dir, 'www/small.json'), SMALL_ANSWER);
    writeFileSync(join(dir, 'www/large.json'), LARGE_ANSWER);
    writeFileSync(join(dir, 'www/stream.sse'), STREAM_ANSWER);
    writeFileSync(
      join(dir, 'nginx.conf'),
      `${nginxHead(dir, userInfo().username)}
  default_type application/json;
  server {
    listen 127.0.0.1:${upstreamPort};
    keepalive_requests 1000000;
    root ${dir}/www;
    location = /small.json { internal; }
    location = /large.json { internal; }
    location /small { error_page 405 =200 /small.json; rewrite ^ /small.json break; }
    location /large { error_page 405 =200 /large.json; rewrite ^ /large.json break; }
    location = /stream.sse { internal; default_type text/event-stream; }
    location /stream { error_page 405 =200 /stream.sse; rewrite ^ /stream.sse break; }
  }
}
`,
    );
    start('nginx', '1', 'nginx', ['-p', dir, '-e', join(dir, 'error.log'), '-c', join(dir, 'nginx.conf')], 'ignore', children);
    const path = size === 'large' ? LARGE_PATH : size === 'stream' ? STREAM_PATH : SMALL_PATH;
    await waitFor200(`http://127.0.0.1:${upstreamPort}${path}`);
    let sinkPort = 0;
    if (checkouts.some(([, c]) => traced(c))) {
      sinkPort = await freePort();
      start('otlp sink', '1', process.execPath, [join(dirname(fileURLToPath(import.meta.url)), 'otlp-sink.ts'), String(sinkPort)], 'ignore', children);
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
    const jwt = checkouts.some(([, c]) => withJwt(c)) ? await jwtSetup(dir) : undefined;
    const gateways: Gateway[] = [];
    for (const [name, checkout] of checkouts) {
      const out = join(dir, `${name}.out`);
      if (name === 'bare' || name.startsWith('lean-')) {
        // The bare undici proxy (bare-proxy.ts) of that checkout, for the ratio; no access log. `lean-MODE`: that
        // checkout's lean-proxy.ts in MODE (docs/perf.md "Lean upstream client, session 8").
        const port = await freePort();
        const fd = openSync(out, 'w');
        const script = name === 'bare' ? ['test/bench/bare-proxy.ts'] : ['test/bench/lean-proxy.ts'];
        const mode = name === 'bare' ? [] : [name.slice('lean-'.length)];
        const semi = name === 'bare' ? [] : [`--max-semi-space-size=${CLI_SEMI}`]; // as the gateway runs
        const child = start(name, '0', process.execPath, [...semi, '--trace-gc-nvp', join(checkout, script[0]!), String(port), String(upstreamPort), ...mode], fd, children);
        closeSync(fd);
        await waitFor200(`http://127.0.0.1:${port}${path}`);
        gateways.push({ name, child, url: `http://127.0.0.1:${port}${path}`, out, offset: 0, cpu: [], scavenges: [], gcUs: [], promotedB: [], markCompacts: [], allocKiB: [], rps: [], rssMiB: [] });
        continue;
      }
      const [port, admin, stats, readiness] = [await freePort(), await freePort(), await freePort(), await freePort()];
      const ai = aiRoute(checkout);
      const backend = ai ? { ai: { name: 'bench', provider: { openAI: {} }, hostOverride: `127.0.0.1:${upstreamPort}`, pathOverride: path } } : { host: `127.0.0.1:${upstreamPort}` };
      const keys = keyed(checkout)
        ? { virtualKeys: { store: { sqlite: { path: join(dir, `${name}-keys.db`) } }, budgets: BIG_BUDGETS, teams: [{ name: 'bench', budgets: BIG_BUDGETS }], keys: [{ id: 'bench', key: BENCH_KEY, team: 'bench', budgets: BIG_BUDGETS }] } }
        : undefined;
      const route = { name: ai ? 'ai' : 'host', matches: [{ path: { pathPrefix: '/' } }], backends: [backend], ...(withPolicies(checkout) ? { policies: POLICIES } : withJwt(checkout) ? { policies: jwtPolicies(jwt!.jwksFile) } : keys ? { policies: keys } : {}) };
      const cfg = join(dir, `${name}.yaml`);
      writeFileSync(
        cfg,
        stringify({
          config: {
            adminAddr: `127.0.0.1:${admin}`,
            statsAddr: `127.0.0.1:${stats}`,
            readinessAddr: `127.0.0.1:${readiness}`,
            ...(workersOf(checkout) > 1 ? { workers: workersOf(checkout) } : {}),
            ...(traced(checkout) ? { tracing: { otlpEndpoint: `http://127.0.0.1:${sinkPort}`, otlpProtocol: 'http', randomSampling: true } } : {}),
          },
          binds: [{ port, listeners: [{ name: 'bench', routes: [route] }] }],
        }),
      );
      const fd = openSync(out, 'w');
      // The semi-space flag given: the CLI does not re-execute itself, so the PID is the gateway's.
      const extra = (process.env.PLAIN_AB_NODE_ARGS ?? '').split(' ').filter(Boolean);
      const cpus = workersOf(checkout) > 1 ? '0,1' : '0';
      const child = start(name, cpus, process.execPath, [`--max-semi-space-size=${semiOf(checkout)}`, ...v8Of(checkout), '--trace-gc-nvp', ...extra, join(rootOf(checkout), 'bin/switchyard.js'), '-f', cfg], fd, children, envOf(checkout));
      closeSync(fd);
      await waitFor200(`http://127.0.0.1:${readiness}/healthz/ready`);
      gateways.push({ name, child, url: `http://127.0.0.1:${port}${path}`, origin: withPolicies(checkout) ? BENCH_ORIGIN : undefined, authorization: keyed(checkout) ? `Bearer ${BENCH_KEY}` : withJwt(checkout) ? `Bearer ${jwt!.token}` : undefined, out, offset: 0, cpu: [], scavenges: [], gcUs: [], promotedB: [], markCompacts: [], allocKiB: [], rps: [], rssMiB: [] });
    }
    const gwPid = (g: Gateway): number => {
      // taskset execs the command: the child's PID is the gateway's.
      return g.child.pid!;
    };
    for (const g of gateways) {
      const warm = await runLoad(g.url, 5000, connections, g.origin, g.authorization);
      if (warm.bad) throw new Error(`${g.name}: ${warm.bad} non-200 answers in the warm-up`);
      gcSince(g);
    }
    for (let round = 0; round < rounds; round++) {
      const order = round % 2 === 0 ? gateways : [...gateways].reverse();
      for (const g of order) {
        const c0 = cpuUs(gwPid(g));
        const r = await runLoad(g.url, requests, connections, g.origin, g.authorization);
        const c1 = cpuUs(gwPid(g));
        await new Promise((resolve) => setTimeout(resolve, 200)); // the last trace lines
        const gc = gcSince(g);
        g.cpu.push((c1 - c0) / requests);
        g.scavenges.push(gc.scavenges);
        g.gcUs.push((gc.pauseMs * 1000) / requests);
        g.promotedB.push(gc.promoted / requests);
        g.markCompacts.push(gc.markCompacts);
        g.allocKiB.push(gc.allocated / 1024 / requests);
        g.rps.push((requests / r.ms) * 1000);
        g.rssMiB.push(rssMiB(gwPid(g)));
        console.log(`round ${round + 1} ${g.name}: ${fmt((c1 - c0) / requests)} CPU µs/req, ${fmt((requests / r.ms) * 1000)} req/s, ${gc.scavenges} scavenges (${fmt(g.gcUs.at(-1)!, 1)} µs/req of GC pauses, ${fmt(g.promotedB.at(-1)!)} B/req promoted), ${gc.markCompacts} other GCs, ${(gc.allocated / 1024 / requests).toFixed(2)} KiB allocated/req, RSS ${fmt(g.rssMiB.at(-1)!)} MiB${r.bad ? `, ${r.bad} non-200` : ''}`);
      }
    }
    console.log(`\n${size} answer, ${requests} requests per phase at c=${connections}, ${rounds} rounds`);
    for (const g of gateways) console.log(`${g.name}: CPU µs/req ${range(g.cpu)}; req/s ${range(g.rps)}; scavenges ${range(g.scavenges)}; GC pauses µs/req ${range(g.gcUs, 1)}; promoted B/req ${range(g.promotedB)}; other GCs ${range(g.markCompacts)}; KiB allocated/req ${Math.min(...g.allocKiB).toFixed(2)}-${Math.max(...g.allocKiB).toFixed(2)}; RSS MiB ${range(g.rssMiB)}`);
    if (gateways.length > 1) {
      const base = gateways[0]!;
      for (const g of gateways.slice(1)) {
        const ratios = g.cpu.map((c, i) => (c / base.cpu[i]!).toFixed(2));
        console.log(`${g.name} ÷ ${base.name} CPU per round: ${ratios.join(', ')}`);
      }
    }
  } finally {
    stopAll();
    await new Promise((r) => setTimeout(r, 300));
    rmSync(dir, { recursive: true, force: true });
  }
}

await main(process.argv.slice(2));
