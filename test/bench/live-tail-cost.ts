// Issue 12 "Targets": "a live tail of 1,000 req/s does not slow the data plane by more than 5%". Measured in one
// process so a loaded machine shifts every variant alike: an in-process upstream, two in-process gateways (no tail;
// the admin UI live tail `/ui/api/tail` attached, its reader in this process too) and a client that paces requests
// at a fixed rate (default 1,000 req/s, on keep-alive connections). Windows alternate direct / untailed / tailed;
// each window's process CPU per request (client, gateway and upstream together) and the client's latencies are read.
// The gateway's share is a gateway window minus the direct window beside it; what the tail adds is tailed minus
// untailed. At the fixed rate that is the tail's cost as a share of one core, and a saturated gateway (alone on a
// core) would do req/s in inverse proportion to its share: projected tailed ÷ untailed = share(off) ÷ share(tail).
// Usage: node test/bench/live-tail-cost.ts [rounds=5] [seconds per window=3] [rate=1000]
import { createServer, get } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Pool } from 'undici';
import { startGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';

const [ROUNDS, SECONDS, RATE] = [Number(process.argv[2] ?? 5), Number(process.argv[3] ?? 3), Number(process.argv[4] ?? 1000)];
const BODY = Buffer.from(`${JSON.stringify({ ok: true, service: 'bench-upstream', note: 'a small fixed body of about one hundred bytes' })}\n`);

const upstream = createServer((_req, res) => {
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(BODY.length) }).end(BODY);
});
await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
const upPort = (upstream.address() as AddressInfo).port;

const gateway = async () => {
  const port = await freePort();
  const gw = await startGateway({
    config: { logging: { accessLog: true } },
    binds: [{ port, listeners: [{ routes: [{ name: 'plain', matches: [{ path: { pathPrefix: '/plain' } }], backends: [{ host: `127.0.0.1:${upPort}` }] }] }] }],
  });
  // The in-memory log sink keeps every line; drop them as they come so memory stays flat.
  setInterval(() => (gw.logs.length = 0), 200).unref();
  return { gw, url: `http://127.0.0.1:${port}` };
};
const off = await gateway();
const tailed = await gateway();
let tailEvents = 0;
let tailBytes = 0;
const tailReq = get(`${tailed.gw.adminUrl}/ui/api/tail`, (res) => {
  if (res.statusCode !== 200) throw new Error(`live tail answered ${res.statusCode}`);
  res.setEncoding('utf8');
  res.on('data', (chunk: string) => {
    tailBytes += chunk.length;
    tailEvents += chunk.split('"request.id"').length - 1;
  });
});
tailReq.on('error', () => undefined);

interface Window {
  cpu: number;
  rate: number;
  p50: number;
  p99: number;
}
const variants = [
  { name: 'direct (upstream only)', pool: new Pool(`http://127.0.0.1:${upPort}`, { connections: 64 }), windows: [] as Window[] },
  { name: 'gateway, no tail', pool: new Pool(off.url, { connections: 64 }), windows: [] as Window[] },
  { name: 'gateway, live tail attached', pool: new Pool(tailed.url, { connections: 64 }), windows: [] as Window[] },
];

/** Requests at RATE for SECONDS, started on a fixed schedule (a late tick sends what it owes). */
async function window(pool: Pool): Promise<Window> {
  const total = Math.round(RATE * SECONDS);
  const latencies: number[] = [];
  let sent = 0;
  const inflight = new Set<Promise<void>>();
  const one = async (): Promise<void> => {
    const t = performance.now();
    const r = await pool.request({ path: '/plain', method: 'GET' });
    await r.body.dump();
    if (r.statusCode !== 200) throw new Error(`status ${r.statusCode}`);
    latencies.push(performance.now() - t);
  };
  const t0 = process.cpuUsage();
  const start = performance.now();
  await new Promise<void>((resolve) => {
    const tick = (): void => {
      const due = Math.min(total, Math.floor(((performance.now() - start) / 1000) * RATE));
      while (sent < due) {
        sent++;
        const p = one().finally(() => inflight.delete(p));
        inflight.add(p);
      }
      if (sent < total) setTimeout(tick, 1);
      else resolve();
    };
    tick();
  });
  await Promise.all(inflight);
  const elapsed = (performance.now() - start) / 1000;
  const d = process.cpuUsage(t0);
  latencies.sort((a, b) => a - b);
  return { cpu: (d.user + d.system) / total, rate: total / elapsed, p50: latencies[latencies.length >> 1]!, p99: latencies[Math.floor(latencies.length * 0.99)]! };
}

// Warm-up: JIT, pools, the lazily loaded admin UI module.
for (const v of variants) await window(v.pool);
for (let r = 0; r < ROUNDS; r++) {
  const order = r % 2 ? [...variants].reverse() : variants;
  for (const v of order) v.windows.push(await window(v.pool));
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const os = await import('node:os');
console.log(`# live tail cost in one process: ${ROUNDS} rounds × ${SECONDS} s windows at ${RATE} req/s, Node ${process.version}, load ${os.loadavg().map((x) => x.toFixed(1)).join(' ')}`);
console.log('| variant | achieved req/s (median) | CPU µs/request, all in-process (windows) | p50 ms | p99 ms |');
console.log('|---|---:|---:|---:|---:|');
for (const v of variants) {
  const w = v.windows;
  console.log(`| ${v.name} | ${median(w.map((x) => x.rate)).toFixed(0)} | ${median(w.map((x) => x.cpu)).toFixed(1)} (${w.map((x) => x.cpu.toFixed(0)).join(', ')}) | ${median(w.map((x) => x.p50)).toFixed(2)} | ${median(w.map((x) => x.p99)).toFixed(2)} |`);
}
const direct = variants[0]!.windows.map((w) => w.cpu);
const offShare = variants[1]!.windows.map((w, i) => w.cpu - direct[i]!);
const tailShare = variants[2]!.windows.map((w, i) => w.cpu - direct[i]!);
const added = tailShare.map((s, i) => s - offShare[i]!);
const ratios = offShare.map((o, i) => o / tailShare[i]!);
console.log(`gateway share µs/request: no tail ${median(offShare).toFixed(1)}, tail ${median(tailShare).toFixed(1)}; the tail adds ${median(added).toFixed(1)} µs per request (windows: ${added.map((a) => a.toFixed(0)).join(', ')}), i.e. ${((median(added) * RATE) / 1e4).toFixed(1)} % of one core at ${RATE} req/s`);
console.log(`projected req/s of a gateway saturated at this rate (every request carried by the tail), tailed ÷ untailed: per window ${ratios.map((r) => r.toFixed(2)).join(', ')} (median ${median(ratios).toFixed(2)}×); tail received ${tailEvents} events, ${(tailBytes / 1024 / 1024).toFixed(1)} MiB`);

for (const v of variants) await v.pool.close();
tailReq.destroy();
await off.gw.stop();
await tailed.gw.stop();
upstream.close();
