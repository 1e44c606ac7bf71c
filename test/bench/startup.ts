// Spawn-to-ready and idle RSS only (the quickstart part of `npm run bench`), repeated: a benchmark, not a test.
//
//   node test/bench/startup.ts            5 spawns of `node bin/switchyard.js -f examples/quickstart.yaml`
//   STARTUP_RUNS=9 node test/bench/startup.ts
//
// Each spawn: time from spawn to the first 200 from GET /healthz/ready, the CPU time (user + system, all threads) the
// gateway used until then (less disturbed by other load on the machine), then VmRSS 1 s after readiness; the child
// is stopped by its PID (SIGTERM, SIGKILL after 3 s). Reported: each run and the medians, in three compile-cache
// modes (STARTUP_CACHE=off,fresh,warm by default):
//   off    NODE_DISABLE_COMPILE_CACHE=1: no on-disk compile cache at all
//   fresh  an empty NODE_COMPILE_CACHE directory per spawn: the first start after an install or an upgrade
//   warm   one NODE_COMPILE_CACHE directory shared by the spawns, primed by one unmeasured spawn
//   default  no NODE_COMPILE_CACHE: the cache the CLI turns on itself (os.tmpdir()), as a user's start gets it,
//          primed by one unmeasured spawn (the launcher must turn it on before its first TypeScript module)
// The config is a copy of the quickstart that differs only in its ports (free ports, as in `npm run bench`).
// STARTUP_NODE_ARGS='--flag …' passes Node options before the script (to compare V8 flags, for example).
// STARTUP_CLI=/path/to/bin/switchyard.js measures another launcher (the installed npm package, docs/adr/0022).
// Several, comma-separated (`STARTUP_CLI=bin/switchyard.js,/tmp/x/node_modules/switchyard/bin/switchyard.js`), are
// measured interleaved (A, B, A, B, …) in each mode, so that load on a shared machine hits them alike.
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../helpers/ports.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** STARTUP_CLI: another launcher, such as an installed package's `node_modules/switchyard/bin/switchyard.js`. */
const CLIS = (process.env.STARTUP_CLI ?? join(ROOT, 'bin/switchyard.js')).split(',').map((s) => s.trim()).filter(Boolean);
const QUICKSTART = join(ROOT, 'examples/quickstart.yaml');
const RUNS = Math.max(1, Number(process.env.STARTUP_RUNS) || 5);
const MODES = (process.env.STARTUP_CACHE ?? 'off,fresh,warm').split(',').map((s) => s.trim()).filter(Boolean);
const EXTRA_ARGS = (process.env.STARTUP_NODE_ARGS ?? '').split(' ').filter(Boolean);

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[s.length >> 1]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

function status(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { headers: { connection: 'close' }, agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.setTimeout(2000, () => req.destroy(new Error('timeout')));
    req.end();
  });
}

/** User + system CPU time of a process so far (all threads), in ms: less disturbed by other load than wall time. */
function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(f[11]) + Number(f[12])) * 1000) / CLOCK_TICKS;
}
/** USER_HZ; 100 on every Linux this runs on. */
const CLOCK_TICKS = 100;

function rssMiB(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}

const live = new Set<ChildProcess>();
process.on('exit', () => {
  for (const c of live) if (c.exitCode === null && c.pid !== undefined) {
    try {
      process.kill(c.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
});

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  process.kill(child.pid, 'SIGTERM');
  const timer = setTimeout(() => {
    if (child.exitCode === null && child.pid !== undefined) process.kill(child.pid, 'SIGKILL');
  }, 3000);
  await exited;
  clearTimeout(timer);
}

async function once(cli: string, configFile: string, readyUrl: string, env: NodeJS.ProcessEnv): Promise<{ readyMs: number; cpu: number; rss: number }> {
  const t0 = performance.now();
  const child = spawn(process.execPath, [...EXTRA_ARGS, cli, '-f', configFile], { cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'], env });
  live.add(child);
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (s: string) => (stderr = (stderr + s).slice(-4000)));
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`gateway exited (${child.exitCode}): ${stderr}`);
      try {
        if ((await status(readyUrl)) === 200) break;
      } catch {
        // not listening yet
      }
      if (performance.now() - t0 > 60_000) throw new Error(`not ready after 60 s: ${stderr}`);
      await sleep(5);
    }
    const readyMs = performance.now() - t0;
    const cpu = cpuMs(child.pid!);
    await sleep(1000);
    return { readyMs, cpu, rss: rssMiB(child.pid!) };
  } finally {
    await stop(child);
    live.delete(child);
  }
}

async function main(): Promise<void> {
  const work = mkdtempSync(join(tmpdir(), 'switchyard-startup-'));
  try {
    // The quickstart on free ports: other sessions run it on its fixed ones, and a gateway of theirs must not
    // answer this probe.
    const map = new Map<number, number>();
    for (const p of [3000, 3001, 15000, 15020, 15021]) map.set(p, await freePort());
    const text = readFileSync(QUICKSTART, 'utf8').replace(/\b(3000|3001|15000|15020|15021)\b/g, (m) => String(map.get(Number(m))));
    const configFile = join(work, 'quickstart.yaml');
    writeFileSync(configFile, text);
    const readinessPort = map.get(15021)!;
    const readyUrl = `http://127.0.0.1:${readinessPort}/healthz/ready`;
    const load = (): string => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
    console.log(`${CLIS.join('\n')}\nnode ${process.version}${EXTRA_ARGS.length ? ` ${EXTRA_ARGS.join(' ')}` : ''}, ${RUNS} spawns per mode and launcher, load ${load()}`);
    for (const mode of MODES) {
      const base: NodeJS.ProcessEnv = { ...process.env };
      delete base.NODE_COMPILE_CACHE;
      delete base.NODE_DISABLE_COMPILE_CACHE;
      const envFor = (c: number, i: number): NodeJS.ProcessEnv => {
        if (mode === 'off') return { ...base, NODE_DISABLE_COMPILE_CACHE: '1' };
        if (mode === 'fresh') return { ...base, NODE_COMPILE_CACHE: join(work, `cache-fresh-${c}-${i}`) };
        if (mode === 'warm') return { ...base, NODE_COMPILE_CACHE: join(work, `cache-${mode}-${c}`) };
        if (mode === 'default') return base;
        throw new Error(`unknown STARTUP_CACHE mode ${mode}`);
      };
      if (mode === 'warm' || mode === 'default') for (const [c, cli] of CLIS.entries()) await once(cli, configFile, readyUrl, envFor(c, -1));
      const runs = CLIS.map(() => ({ ready: [] as number[], cpu: [] as number[], rss: [] as number[] }));
      for (let i = 0; i < RUNS; i++) {
        for (const [c, cli] of CLIS.entries()) {
          const r = await once(cli, configFile, readyUrl, envFor(c, i));
          runs[c]!.ready.push(r.readyMs);
          runs[c]!.cpu.push(r.cpu);
          runs[c]!.rss.push(r.rss);
        }
      }
      for (const [c, { ready, cpu, rss }] of runs.entries()) {
        console.log(
          `${mode.padEnd(5)}${CLIS.length > 1 ? ` [${c}]` : ''} ready ${ready.map((x) => x.toFixed(0)).join(', ')} ms (median ${median(ready).toFixed(0)}); ` +
            `CPU to ready ${cpu.map((x) => x.toFixed(0)).join(', ')} ms (median ${median(cpu).toFixed(0)}); ` +
            `idle RSS ${rss.map((x) => x.toFixed(1)).join(', ')} MiB (median ${median(rss).toFixed(1)})`,
        );
      }
      console.log(`  load after ${mode}: ${load()}`);
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

await main();
