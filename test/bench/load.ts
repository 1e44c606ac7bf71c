// The load generator, run as its own process so it never shares the gateway's event loop.
// Usage: node test/bench/load.ts '<json Job[]>'   → runs the jobs in order and prints one JSON line (a JobResult)
// per job as soon as it is done.
// autocannon's own latency histogram has whole-millisecond resolution; the c=1 phase keeps sub-millisecond samples
// from the per-response event instead.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

export interface Job {
  readonly url: string;
  readonly headers?: Record<string, string>;
  /** Default GET. */
  readonly method?: string;
  /** Request body (a JSON-RPC message for the MCP rows). */
  readonly body?: string;
  /** Replace every `[<id>]` in the body with a fresh number per request: JSON-RPC ids must not repeat among the
   *  requests in flight on one MCP session. (autocannon's own `idReplacement` assumes a fixed id length and sends
   *  a wrong Content-Length.) */
  readonly uniqueIds?: boolean;
  /** A header whose value changes per request, in turn (e.g. one of 1,000 API keys): every `[<n>]` in `value` is
   *  replaced by 0 … count − 1, zero-padded to `width` digits. (A template, since jobs travel in argv.) */
  readonly numberedHeader?: { readonly name: string; readonly value: string; readonly count: number; readonly width: number };
  /** Requests per second across all connections (autocannon `overallRate`); unset: as fast as the target answers. */
  readonly rate?: number;
  /** Seconds of load at `connections` before measuring (results discarded). */
  readonly warmupS: number;
  readonly connections: number;
  /** Seconds of the throughput phase. */
  readonly throughputS: number;
  /** Seconds of the concurrency-1 latency phase (0: skip). */
  readonly latencyS: number;
  /** Processes serving the target: their CPU time (user + system, all threads) is read around the c=N phase. */
  readonly cpuPids?: readonly number[];
  /** Other processes whose CPU time is read the same way (the upstream behind a proxy), reported apart. */
  readonly sideCpuPids?: readonly number[];
  /** Also time every response of the c=N phase, for sub-millisecond p50/p99 there (autocannon's are whole ms). */
  readonly sampleThroughput?: boolean;
  /** Processes whose summed VmRSS is sampled every 200 ms during the c=N phase; the largest sum is reported. */
  readonly rssPids?: readonly number[];
}

export interface Phase {
  readonly requests: number;
  readonly ok: number;
  readonly non2xx: number;
  readonly errors: number;
  readonly timeouts: number;
  readonly durationS: number;
  /** 2xx responses per second. */
  readonly rps: number;
  readonly statusCodes: Record<string, number>;
  /** Milliseconds (sub-millisecond for the c=1 phase, whole milliseconds from autocannon otherwise). */
  readonly p50: number;
  readonly p99: number;
  /** CPU time the target processes spent per request in this phase, µs (NaN when not measured). */
  readonly cpuUsPerReq: number;
  /** The same for `sideCpuPids` (NaN when not measured). */
  readonly sideCpuUsPerReq: number;
  /** CPU time of this load generator per request in this phase, µs (it shares its CPU with the upstreams). */
  readonly loadCpuUsPerReq: number;
  /** The largest summed VmRSS of `rssPids` seen during this phase, MiB (NaN when not measured). */
  readonly rssMiB: number;
}

export interface JobResult {
  readonly index: number;
  readonly throughput: Phase;
  readonly latency: Phase | null;
}

interface AutocannonResult {
  requests: { total: number };
  latency: { p50: number; p99: number };
  duration: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  '2xx': number;
  statusCodeStats: Record<string, { count: number }>;
}
interface Tracker {
  on(event: 'response', listener: (client: unknown, status: number, bytes: number, ms: number) => void): void;
}
type Autocannon = (opts: Record<string, unknown>, cb: (err: Error | null, result: AutocannonResult) => void) => Tracker;

// autocannon ships no types; it is a devDependency used only here.
const autocannon = createRequire(import.meta.url)('autocannon') as Autocannon;

let nextId = 0;

function run(job: Job, connections: number, seconds: number, samples?: number[]): Promise<AutocannonResult> {
  const parts = job.uniqueIds && job.body !== undefined ? job.body.split('[<id>]') : undefined;
  // autocannon rebuilds the request (Content-Length included) from what `setupRequest` returns, for every request.
  const numbered = job.numberedHeader;
  const values = numbered ? Array.from({ length: numbered.count }, (_, n) => numbered.value.split('[<n>]').join(String(n).padStart(numbered.width, '0'))) : undefined;
  let turn = 0;
  const requests =
    parts || numbered
      ? [
          {
            setupRequest: (req: Record<string, unknown>) => ({
              ...req,
              ...(parts ? { body: parts.join(String(nextId++)) } : {}),
              ...(numbered ? { headers: { ...(req.headers as Record<string, string>), [numbered.name]: values![turn++ % numbered.count]! } } : {}),
            }),
          },
        ]
      : undefined;
  return new Promise((resolve, reject) => {
    const tracker = autocannon(
      {
        url: job.url,
        method: job.method ?? 'GET',
        headers: job.headers ?? {},
        body: job.body,
        requests,
        connections,
        duration: seconds,
        timeout: 10,
        pipelining: 1,
        ...(job.rate ? { overallRate: job.rate } : {}),
      },
      (err, result) => (err ? reject(err) : resolve(result)),
    );
    if (samples) tracker.on('response', (_c, status, _b, ms) => void (status >= 200 && status < 300 && samples.push(ms)));
  });
}

let clockTicks = 100;
try {
  clockTicks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
} catch {
  // Linux default
}

/** utime + stime of the processes, in µs (NaN when /proc is not readable). */
function cpuUs(pids: readonly number[] | undefined): number {
  if (!pids?.length) return NaN;
  let ticks = 0;
  for (const pid of pids) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      ticks += Number(fields[11]) + Number(fields[12]);
    } catch {
      return NaN;
    }
  }
  return (ticks * 1e6) / clockTicks;
}

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** Summed VmRSS of the processes, MiB (NaN when one is gone or /proc is not readable). */
function rssMiB(pids: readonly number[]): number {
  let kb = 0;
  for (const pid of pids) {
    try {
      const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
      kb += m ? Number(m[1]) : NaN;
    } catch {
      return NaN;
    }
  }
  return kb / 1024;
}

function phase(r: AutocannonResult, samples?: number[], cpu = NaN, sideCpu = NaN, loadCpu = NaN, rss = NaN): Phase {
  const codes: Record<string, number> = {};
  for (const [code, { count }] of Object.entries(r.statusCodeStats ?? {})) codes[code] = count;
  let p50 = r.latency.p50;
  let p99 = r.latency.p99;
  if (samples && samples.length) {
    const sorted = samples.sort((a, b) => a - b);
    p50 = percentile(sorted, 50);
    p99 = percentile(sorted, 99);
  }
  return {
    requests: r.requests.total,
    ok: r['2xx'],
    non2xx: r.non2xx,
    errors: r.errors,
    timeouts: r.timeouts,
    durationS: r.duration,
    rps: r['2xx'] / r.duration,
    statusCodes: codes,
    p50,
    p99,
    cpuUsPerReq: cpu / r.requests.total,
    sideCpuUsPerReq: sideCpu / r.requests.total,
    loadCpuUsPerReq: loadCpu / r.requests.total,
    rssMiB: rss,
  };
}

const jobs = JSON.parse(process.argv[2] ?? '[]') as Job[];
for (const [index, job] of jobs.entries()) {
  if (job.warmupS > 0) await run(job, job.connections, job.warmupS);
  const cpu0 = cpuUs(job.cpuPids);
  const side0 = cpuUs(job.sideCpuPids);
  const self0 = process.cpuUsage();
  const samples: number[] | undefined = job.sampleThroughput ? [] : undefined;
  let rss = NaN;
  const sampleRss = (): void => {
    const now = job.rssPids?.length ? rssMiB(job.rssPids) : NaN;
    if (Number.isFinite(now)) rss = Number.isNaN(rss) ? now : Math.max(rss, now);
  };
  const rssTimer = job.rssPids?.length ? setInterval(sampleRss, 200) : undefined;
  const measured = await run(job, job.connections, job.throughputS, samples);
  clearInterval(rssTimer);
  sampleRss();
  const self = process.cpuUsage(self0);
  const throughput = phase(measured, samples, cpuUs(job.cpuPids) - cpu0, cpuUs(job.sideCpuPids) - side0, self.user + self.system, rss);
  let latency: Phase | null = null;
  if (job.latencyS > 0) {
    const samples: number[] = [];
    latency = phase(await run(job, 1, job.latencyS, samples), samples);
  }
  process.stdout.write(`${JSON.stringify({ index, throughput, latency } satisfies JobResult)}\n`);
}
