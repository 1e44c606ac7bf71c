// The observability rows (issue 12 "Targets (benchmark)"; alone with BENCH_ONLY=observability):
// - tracing: the plain route with no tracing, and with `config.tracing` at 100% sampling (`randomSampling: true`)
//   exporting OTLP/HTTP to a sink (otlp-sink.ts) on the other CPU; target: traced req/s ≥ 0.7× untraced.
// - live tail: the same plain route while an admin UI live tail (`/ui/api/tail`, SSE) is attached, at saturation and
//   at a fixed 1,000 req/s (its design rate: 250 events per 250 ms flush); target: the data plane slows ≤ 5% (CPU per
//   request and p50 at 1,000 req/s).
// - admin UI page load in headless Chromium (when /usr/bin/chromium and playwright-core are there): the first load
//   (the UI module is loaded on first use) and warm loads; target ≤ 1 s on loopback.
// Three gateway processes, one per configuration, each pinned to the target CPU and idle while another is measured;
// rounds interleave them.
import { closeSync, mkdirSync, openSync, writeFileSync, existsSync } from 'node:fs';
import { get } from 'node:http';
import type { ClientRequest } from 'node:http';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { freePort } from '../helpers/ports.ts';
import type { Job } from './load.ts';
import type { BenchKit } from './peers.ts';
import type { Child } from './run.ts';

const CHROMIUM = '/usr/bin/chromium';
const TAIL_RATE = 1000;

interface Gw {
  readonly name: string;
  readonly child: Child;
  readonly base: string;
  readonly admin: string;
  readonly pids: number[];
}

interface Row {
  readonly gw: Gw;
  readonly label: string;
  readonly rate?: number;
  readonly cpu: number[];
  readonly rps: number[];
  readonly p50: number[];
  readonly p99: number[];
  bad: number;
}

async function startGw(kit: BenchKit, dir: string, name: string, upstreamPort: number, tracing: Record<string, unknown> | undefined): Promise<Gw> {
  mkdirSync(dir, { recursive: true });
  const [port, admin, stats, readiness] = [await freePort(), await freePort(), await freePort(), await freePort()];
  const file = join(dir, 'gateway.yaml');
  writeFileSync(
    file,
    stringify({
      config: { adminAddr: `127.0.0.1:${admin}`, statsAddr: `127.0.0.1:${stats}`, readinessAddr: `127.0.0.1:${readiness}`, ...(tracing ? { tracing } : {}) },
      binds: [{ port, listeners: [{ name: 'bench', routes: [{ name: 'plain', matches: [{ path: { pathPrefix: '/plain' } }], backends: [{ host: `127.0.0.1:${upstreamPort}` }] }] }] }],
    }),
  );
  // The access log (on by default) goes to a file, as a deployment's would.
  const fd = openSync(join(dir, 'access.log'), 'w');
  const child = kit.startPinned(name, kit.cpuTarget, kit.node, [kit.cli, '-f', file], fd);
  closeSync(fd);
  await kit.waitFor200(`http://127.0.0.1:${readiness}/healthz/ready`, child, performance.now());
  return { name, child, base: `http://127.0.0.1:${port}`, admin: `http://127.0.0.1:${admin}`, pids: kit.processTree(child.proc.pid!) };
}

/** Attach a live tail and count the events it receives (a browser would parse and render them elsewhere). */
function attachTail(admin: string): Promise<{ events(): number; close(): void }> {
  return new Promise((resolve, reject) => {
    let events = 0;
    let carry = '';
    const req: ClientRequest = get(`${admin}/ui/api/tail`, (res) => {
      if (res.statusCode !== 200) return reject(new Error(`live tail answered ${res.statusCode}`));
      res.setEncoding('utf8');
      res.on('data', (s: string) => {
        // One SSE `data:` line per batch, a JSON array of requests: count the requests by their `request.id` keys.
        const text = carry + s;
        const cut = text.lastIndexOf('\n');
        carry = cut === -1 ? text : text.slice(cut + 1);
        const whole = cut === -1 ? '' : text.slice(0, cut);
        events += whole.split('"request.id"').length - 1;
      });
      resolve({ events: () => events, close: () => req.destroy() });
    });
    req.on('error', (err) => reject(err));
  });
}

/** Admin UI page loads in Chromium: navigation start to the load event, first (cold) and then warm. */
async function pageLoads(admin: string): Promise<{ cold: number; warm: number[] } | string> {
  if (!existsSync(CHROMIUM)) return `no ${CHROMIUM}`;
  let chromium: { launch(o: Record<string, unknown>): Promise<{ newPage(): Promise<PwPage>; close(): Promise<void> }> };
  try {
    ({ chromium } = (await import('playwright-core')) as unknown as { chromium: typeof chromium });
  } catch (err) {
    return `playwright-core not loadable: ${(err as Error).message}`;
  }
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  try {
    const page = await browser.newPage();
    const once = async (): Promise<number> => {
      await page.goto(`${admin}/ui`, { waitUntil: 'load' });
      // Evaluated in the page (no DOM types here): navigation start to the end of the load event.
      return Number(await page.evaluate("(() => { const n = performance.getEntriesByType('navigation')[0]; return n.loadEventEnd - n.startTime; })()"));
    };
    const cold = await once();
    const warm: number[] = [];
    for (let i = 0; i < 5; i++) warm.push(await once());
    return { cold, warm };
  } finally {
    await browser.close();
  }
}
interface PwPage {
  goto(url: string, o: Record<string, unknown>): Promise<unknown>;
  evaluate(expression: string): Promise<unknown>;
}

export async function observabilityScenario(kit: BenchKit, notes: string[]): Promise<void> {
  const { fmt, median } = kit;
  const dir = join(kit.work, 'observability');
  mkdirSync(dir, { recursive: true });
  const upstreamPort = await freePort();
  const upstream = kit.startPinned('upstream (observability)', kit.cpuRest, kit.node, [join(kit.here, 'upstream.ts'), String(upstreamPort)]);
  const sinkPort = await freePort();
  const sink = kit.startPinned('otlp sink', kit.cpuRest, kit.node, [join(kit.here, 'otlp-sink.ts'), String(sinkPort)]);
  await Promise.all([kit.listening(upstream), kit.listening(sink)]);

  const off = await startGw(kit, join(dir, 'off'), 'switchyard (tracing off)', upstreamPort, undefined);
  const traced = await startGw(kit, join(dir, 'traced'), 'switchyard (tracing 100%)', upstreamPort, { otlpEndpoint: `http://127.0.0.1:${sinkPort}`, otlpProtocol: 'http', randomSampling: true });
  const tailed = await startGw(kit, join(dir, 'tail'), 'switchyard (live tail attached)', upstreamPort, undefined);
  const children = [upstream, sink, off.child, traced.child, tailed.child];

  for (const g of [off, traced, tailed]) {
    const r = await fetch(`${g.base}/plain`);
    if (r.status !== 200) throw new Error(`${g.name} answered ${r.status}`);
    await r.text();
  }
  const tail = await attachTail(tailed.admin);

  const row = (gw: Gw, label: string, rate?: number): Row => ({ gw, label, rate, cpu: [], rps: [], p50: [], p99: [], bad: 0 });
  const saturated = [row(off, 'tracing off'), row(traced, 'tracing on, 100% sampled, OTLP/HTTP export'), row(tailed, 'live tail attached')];
  const paced = [row(off, `tracing off, ${TAIL_RATE} req/s`, TAIL_RATE), row(tailed, `live tail attached, ${TAIL_RATE} req/s`, TAIL_RATE)];
  const all = [...saturated, ...paced];
  const jobs: Job[] = [];
  for (let round = 0; round < kit.rounds; round++) {
    for (const r of all) {
      jobs.push({
        url: `${r.gw.base}/plain`,
        warmupS: round === 0 ? kit.warmupS : 0.3,
        connections: r.rate ? 10 : kit.connections,
        rate: r.rate,
        throughputS: kit.throughputS / kit.rounds,
        latencyS: r.rate ? 0 : kit.latencyS / kit.rounds,
        cpuPids: r.gw.pids,
        sampleThroughput: r.rate !== undefined,
      });
    }
  }
  const tailBefore = tail.events();
  await kit.load(jobs, (res) => {
    const r = all[res.index % all.length]!;
    const t = res.throughput;
    r.cpu.push(t.cpuUsPerReq);
    r.rps.push(t.rps);
    r.p50.push(r.rate ? t.p50 : (res.latency?.p50 ?? NaN));
    r.p99.push(t.p99);
    r.bad += t.requests - t.ok + t.errors + t.timeouts;
    console.log(`round ${Math.floor(res.index / all.length) + 1}/${kit.rounds} ${r.label}: ${fmt(t.rps, 0)} req/s, ${fmt(t.cpuUsPerReq, 0)} CPU µs/req, p50 ${fmt(r.p50.at(-1)!, 3)} ms`);
  });
  const tailEvents = tail.events() - tailBefore;
  tail.close();
  const sinkStats = (await (await fetch(`http://127.0.0.1:${sinkPort}/stats`)).json()) as { exports: number; bytes: number };
  const ui = await pageLoads(off.admin).catch((err: unknown) => `failed: ${(err as Error).message}`);
  for (const c of children) await kit.stop(c);

  const perRound = (r: Row, base: Row, of: 'rps' | 'cpu' | 'p50'): number[] => r[of].map((v, i) => v / base[of][i]!);
  console.log(`\n| target | req/s | CPU µs/req (rounds) | p50 ms | p99 ms | ÷ tracing off per round (req/s; CPU) |`);
  console.log('|---|---:|---:|---:|---:|---|');
  for (const r of all) {
    const base = r.rate ? paced[0]! : saturated[0]!;
    const ratio = r === base ? '—' : `${perRound(r, base, 'rps').map((v) => fmt(v)).join(', ')} (${fmt(median(perRound(r, base, 'rps')))}×); ${fmt(median(perRound(r, base, 'cpu')))}×`;
    console.log(`| ${r.label} | ${fmt(median(r.rps), 0)} | ${fmt(median(r.cpu), 1)} (${r.cpu.map((v) => fmt(v, 0)).join(', ')}) | ${fmt(median(r.p50), 3)} | ${r.rate ? fmt(median(r.p99), 3) : '—'} | ${ratio} |`);
  }
  for (const r of all.filter((x) => x.bad > 0)) notes.push(`${r.label}: ${r.bad} failed requests during the measurement`);
  notes.push(`OTLP sink received ${sinkStats.exports} exports, ${fmt(sinkStats.bytes / 1024 / 1024, 1)} MiB; the live tail client received ${tailEvents} request events`);

  const tracedRatio = median(perRound(saturated[1]!, saturated[0]!, 'rps'));
  const tailCpu = median(perRound(paced[1]!, paced[0]!, 'cpu'));
  const tailP50 = median(perRound(paced[1]!, paced[0]!, 'p50'));
  const tailSat = median(perRound(saturated[2]!, saturated[0]!, 'rps'));
  console.log('\n| target check | verdict | measured |\n|---|---|---|');
  console.log(`| tracing on (100%) ≥ 0.7× tracing off (plain route req/s) | ${tracedRatio >= 0.7 ? 'PASS' : 'MISS'} | ${fmt(tracedRatio)}× |`);
  console.log(`| live tail at ${TAIL_RATE} req/s slows the data plane ≤ 5% (CPU per request; p50) | ${tailCpu <= 1.05 && tailP50 <= 1.05 ? 'PASS' : 'MISS'} | CPU ${fmt(tailCpu)}×, p50 ${fmt(tailP50)}× (saturated req/s ${fmt(tailSat)}×) |`);
  if (typeof ui === 'string') console.log(`| admin UI page load ≤ 1 s | not measured | ${ui} |`);
  else console.log(`| admin UI page load ≤ 1 s (Chromium, navigation start to load event) | ${Math.max(ui.cold, ...ui.warm) <= 1000 ? 'PASS' : 'MISS'} | first ${fmt(ui.cold, 0)} ms, then ${ui.warm.map((v) => fmt(v, 0)).join(', ')} ms |`);
}
