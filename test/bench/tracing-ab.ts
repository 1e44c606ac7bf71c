// Tracing's cost per request, this checkout against another (`OLD=/path/to/checkout`), in one process: an upstream,
// the untraced gateway of this checkout and a traced gateway (100% sampled, OTLP/HTTP to otlp-sink.ts in a child
// process) of each build, and a keep-alive client. Blocks of requests alternate between the upstream directly and each
// gateway; a block's CPU time (process.cpuUsage) per request minus the direct block's beside it is the gateway's
// share, and a gateway alone on a core does req/s in inverse proportion to it: projected traced ÷ untraced req/s is
// share(off) ÷ share(on), per block. Log lines are dropped (a LogSink that keeps nothing). Run it under the CLI's heap
// setting (ADR 0041), as scavenges and promotion are part of tracing's cost there:
//   OLD=/tmp/old node --max-semi-space-size=4 test/bench/tracing-ab.ts [blocks=7] [requests per block=3000] [c=16]
import { mkdtempSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Pool } from 'undici';
import { stringify } from 'yaml';
import { freePort } from '../helpers/ports.ts';
import { cpuPerRequest, median, startFixedUpstream, startOtlpSink } from './tracing-fixtures.ts';

const [BLOCKS, PER_BLOCK, C] = [Number(process.argv[2] ?? 7), Number(process.argv[3] ?? 3000), Number(process.argv[4] ?? 16)];
const HERE = fileURLToPath(new URL('.', import.meta.url));
const ROOT = join(HERE, '../..');
const { server: upstream, port: upPort } = await startFixedUpstream();
const { child: sink, port: sinkPort } = await startOtlpSink();

interface Started {
  url: string;
  stop(): Promise<void>;
}
async function gateway(root: string, traced: boolean): Promise<Started> {
  const kernel = (await import(join(root, 'kernel/index.ts'))) as typeof import('../../kernel/index.ts');
  const { fullPreset } = (await import(join(root, 'plugins/presets/full.ts'))) as typeof import('../../plugins/presets/full.ts');
  const { FIRST_PARTY_KEYS } = (await import(join(root, 'plugins/presets/catalog.ts'))) as typeof import('../../plugins/presets/catalog.ts');
  const port = await freePort();
  const file = join(mkdtempSync(join(tmpdir(), 'switchyard-bench-')), 'config.yaml');
  const tracing = traced ? { tracing: { otlpEndpoint: `http://127.0.0.1:${sinkPort}`, otlpProtocol: 'http', randomSampling: true } } : {};
  writeFileSync(
    file,
    stringify({
      config: { adminAddr: '127.0.0.1:0', statsAddr: '127.0.0.1:0', readinessAddr: '127.0.0.1:0', logging: { accessLog: true }, ...tracing },
      binds: [{ port, listeners: [{ routes: [{ name: 'plain', matches: [{ path: { pathPrefix: '/plain' } }], backends: [{ host: `127.0.0.1:${upPort}` }] }] }] }],
    }),
  );
  const gw = kernel.createGateway({ preset: fullPreset, knownKeys: FIRST_PARTY_KEYS, config: { file }, watch: false, env: process.env }, new kernel.LogSink(() => undefined));
  await gw.start();
  return { url: `http://127.0.0.1:${port}`, stop: () => gw.stop() };
}

const variants: { name: string; gw?: Started; pool: Pool; cpu: number[] }[] = [];
const add = (name: string, url: string, gw?: Started): void => {
  variants.push({ name, gw, pool: new Pool(url, { connections: C }), cpu: [] });
};
add('direct', `http://127.0.0.1:${upPort}`);
const off = await gateway(ROOT, false);
add('off (this checkout)', off.url, off);
const on = await gateway(ROOT, true);
add('traced (this checkout)', on.url, on);
if (process.env.OLD) {
  const old = await gateway(process.env.OLD, true);
  add(`traced (OLD ${process.env.OLD})`, old.url, old);
}

const block = (pool: Pool, n: number): Promise<number> => cpuPerRequest(pool, n, C);

for (const v of variants) await block(v.pool, PER_BLOCK);
// Each round in a rotated order, so no variant always follows the same one (scavenges and mark-compacts land on
// whichever block is running).
for (let b = 0; b < BLOCKS; b++) {
  for (let i = 0; i < variants.length; i++) {
    const v = variants[(i + b) % variants.length]!;
    v.cpu.push(await block(v.pool, PER_BLOCK));
  }
}

const direct = variants[0]!.cpu;
const share = (v: (typeof variants)[number]): number[] => v.cpu.map((c, i) => c - direct[i]!);
const offShare = share(variants[1]!);
console.log(`# tracing A/B in one process: ${BLOCKS} blocks × ${PER_BLOCK} requests, c=${C}, Node ${process.version} ${process.execArgv.join(' ')}, load ${loadavg().map((x) => x.toFixed(1)).join(' ')}`);
console.log('| variant | CPU µs/request (median) | gateway share µs (median) | tracing adds µs (median) | projected req/s ÷ untraced, per block (median) |');
console.log('|---|---:|---:|---:|---|');
for (const v of variants) {
  if (v === variants[0]) {
    console.log(`| ${v.name} | ${median(v.cpu).toFixed(1)} | — | — | — |`);
    continue;
  }
  const s = share(v);
  const ratios = offShare.map((o, i) => o / s[i]!);
  const adds = v === variants[1] ? '—' : median(s.map((x, i) => x - offShare[i]!)).toFixed(1);
  const proj = v === variants[1] ? '—' : `${ratios.map((r) => r.toFixed(2)).join(', ')} (**${median(ratios).toFixed(2)}×**)`;
  console.log(`| ${v.name} | ${median(v.cpu).toFixed(1)} | ${median(s).toFixed(1)} | ${adds} | ${proj} |`);
}

for (const v of variants) {
  await v.pool.close();
  await v.gw?.stop();
}
upstream.close();
sink.kill();
