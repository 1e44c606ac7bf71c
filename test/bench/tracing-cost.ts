// What tracing at 100% sampling costs per request, in CPU time, measured in one process so that a loaded machine
// shifts every variant alike: an in-process upstream, two in-process gateways (no tracing; `randomSampling: true`
// exporting OTLP/HTTP to otlp-sink.ts in a child process) and a keep-alive client. Blocks of requests alternate
// between the upstream directly, the untraced gateway and the traced one; each block's CPU time (process.cpuUsage:
// client, gateway and upstream together) is divided by its requests. The gateway's share is a gateway block minus a
// direct block; a gateway alone on a core does req/s in inverse proportion to that share, so the projected
// throughput ratio is share(off) ÷ share(on). A fourth variant, an untraced gateway with an admin UI live tail
// attached (the tail client reads in this process too, as the flushes are the gateway's work), gives the tail's cost
// the same way.
// Usage: node test/bench/tracing-cost.ts [blocks=7] [requests per block=3000] [concurrency=16]
import { get } from 'node:http';
import { Pool } from 'undici';
import { startGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { cpuPerRequest, median, startFixedUpstream, startOtlpSink } from './tracing-fixtures.ts';

const [BLOCKS, PER_BLOCK, CONCURRENCY] = [Number(process.argv[2] ?? 7), Number(process.argv[3] ?? 3000), Number(process.argv[4] ?? 16)];
const { server: upstream, port: upPort } = await startFixedUpstream();

const { child: sink, port: sinkPort } = await startOtlpSink();

const gateway = async (tracing?: Record<string, unknown>) => {
  const port = await freePort();
  const gw = await startGateway({
    config: { logging: { accessLog: true }, ...(tracing ? { tracing } : {}) },
    binds: [{ port, listeners: [{ routes: [{ name: 'plain', matches: [{ path: { pathPrefix: '/plain' } }], backends: [{ host: `127.0.0.1:${upPort}` }] }] }] }],
  });
  // The in-memory log sink keeps every line; drop them as they come so memory stays flat.
  setInterval(() => (gw.logs.length = 0), 200).unref();
  return { gw, url: `http://127.0.0.1:${port}` };
};
const off = await gateway();
const on = await gateway({ otlpEndpoint: `http://127.0.0.1:${sinkPort}`, otlpProtocol: 'http', randomSampling: true });
const tailed = await gateway();
let tailEvents = 0;
const tailReq = get(`${tailed.gw.adminUrl}/ui/api/tail`, (res) => {
  if (res.statusCode !== 200) throw new Error(`live tail answered ${res.statusCode}`);
  res.setEncoding('utf8');
  res.on('data', (chunk: string) => (tailEvents += chunk.split('"request.id"').length - 1));
});
tailReq.on('error', () => undefined);

const variants = [
  { name: 'direct', pool: new Pool(`http://127.0.0.1:${upPort}`, { connections: CONCURRENCY }), cpu: [] as number[] },
  { name: 'gateway, tracing off', pool: new Pool(off.url, { connections: CONCURRENCY }), cpu: [] as number[] },
  { name: 'gateway, tracing 100%', pool: new Pool(on.url, { connections: CONCURRENCY }), cpu: [] as number[] },
  { name: 'gateway, live tail attached', pool: new Pool(tailed.url, { connections: CONCURRENCY }), cpu: [] as number[] },
];

const block = (pool: Pool, n: number): Promise<number> => cpuPerRequest(pool, n, CONCURRENCY);

// Warm-up: JIT, the lazily loaded tracing SDK, pools.
for (const v of variants) await block(v.pool, PER_BLOCK);
for (let b = 0; b < BLOCKS; b++) for (const v of variants) v.cpu.push(await block(v.pool, PER_BLOCK));

const direct = variants[0]!.cpu;
const shareOf = (v: (typeof variants)[number]): number[] => v.cpu.map((c, i) => c - direct[i]!);
const offShare = shareOf(variants[1]!);
const onShare = shareOf(variants[2]!);
const ratios = offShare.map((o, i) => o / onShare[i]!);
console.log(`# tracing cost in one process: ${BLOCKS} blocks × ${PER_BLOCK} requests, concurrency ${CONCURRENCY}, Node ${process.version}`);
console.log('| variant | CPU µs/request, all in-process (blocks) | gateway share µs (median) |');
console.log('|---|---:|---:|');
for (const v of variants) {
  const share = v === variants[0] ? '—' : `${median(shareOf(v)).toFixed(1)}`;
  console.log(`| ${v.name} | ${median(v.cpu).toFixed(1)} (${v.cpu.map((c) => c.toFixed(0)).join(', ')}) | ${share} |`);
}
console.log(`tracing adds ${median(onShare.map((s, i) => s - offShare[i]!)).toFixed(1)} µs CPU per request; projected req/s traced ÷ untraced: per block ${ratios.map((r) => r.toFixed(2)).join(', ')} (median ${median(ratios).toFixed(2)}×)`);
const tailShare = shareOf(variants[3]!);
const tailRatios = offShare.map((o, i) => o / tailShare[i]!);
console.log(`live tail adds ${median(tailShare.map((s, i) => s - offShare[i]!)).toFixed(1)} µs CPU per request (${tailEvents} events received); projected req/s tailed ÷ untraced: per block ${tailRatios.map((r) => r.toFixed(2)).join(', ')} (median ${median(tailRatios).toFixed(2)}×)`);
const stats = (await (await fetch(`http://127.0.0.1:${sinkPort}/stats`)).json()) as { exports: number; bytes: number };
console.log(`OTLP sink: ${stats.exports} exports, ${(stats.bytes / 1024 / 1024).toFixed(1)} MiB`);

for (const v of variants) await v.pool.close();
await off.gw.stop();
await on.gw.stop();
tailReq.destroy();
await tailed.gw.stop();
upstream.close();
sink.kill();
