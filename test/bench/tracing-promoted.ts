// What a plain request leaves to survive the young generation (promoted to the old one), traced and untraced: V8's
// sampling heap profiler with `includeObjectsCollectedByMinorGC: false` keeps only allocations that outlived a
// scavenge (`includeObjectsCollectedByMajorGC: true`: also those a later mark-compact freed), with their stacks.
// One process: an upstream, a gateway (its log lines dropped) and a keep-alive client; OTLP/HTTP to otlp-sink.ts.
// Run it under the CLI's heap setting: node --max-semi-space-size=4 test/bench/tracing-promoted.ts on|off [requests=20000] [c=16]
import { mkdtempSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Pool } from 'undici';
import { stringify } from 'yaml';
import { createGateway, LogSink } from 'switchyard';
import { fullPreset } from '../../plugins/presets/full.ts';
import { FIRST_PARTY_KEYS } from '../../plugins/presets/catalog.ts';
import { freePort } from '../helpers/ports.ts';
import { cpuPerRequest, startFixedUpstream, startOtlpSink } from './tracing-fixtures.ts';

const MODE = process.argv[2] === 'off' ? 'off' : 'on';
const [N, C] = [Number(process.argv[3] ?? 20000), Number(process.argv[4] ?? 16)];
const { server: upstream, port: upPort } = await startFixedUpstream();
const { child: sink, port: sinkPort } = await startOtlpSink();

const port = await freePort();
const tracing = MODE === 'on' ? { tracing: { otlpEndpoint: `http://127.0.0.1:${sinkPort}`, otlpProtocol: 'http', randomSampling: true } } : {};
const file = join(mkdtempSync(join(tmpdir(), 'switchyard-bench-')), 'config.yaml');
writeFileSync(
  file,
  stringify({
    config: { adminAddr: '127.0.0.1:0', statsAddr: '127.0.0.1:0', readinessAddr: '127.0.0.1:0', logging: { accessLog: true }, ...tracing },
    binds: [{ port, listeners: [{ routes: [{ name: 'plain', matches: [{ path: { pathPrefix: '/plain' } }], backends: [{ host: `127.0.0.1:${upPort}` }] }] }] }],
  }),
);
const gateway = createGateway({ preset: fullPreset, knownKeys: FIRST_PARTY_KEYS, config: { file }, watch: false, env: process.env }, new LogSink(() => undefined));
await gateway.start();
const pool = new Pool(`http://127.0.0.1:${port}`, { connections: C });

const run = async (n: number): Promise<void> => void (await cpuPerRequest(pool, n, C));

interface Node {
  id: number;
  selfSize: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children: Node[];
}
await run(5000);
if (process.env.GC_MARKERS) {
  // Under `stdbuf -oL node --trace-gc-nvp …`: markers around the measured requests, for the GC lines between them.
  const { writeSync } = await import('node:fs');
  writeSync(1, '@@start\n');
  const t0 = process.cpuUsage();
  await run(N);
  const d = process.cpuUsage(t0);
  writeSync(1, `@@end ${((d.user + d.system) / N).toFixed(1)}\n`);
  await pool.close();
  await gateway.stop();
  upstream.close();
  sink.kill();
  process.exit(0);
}
const session = new Session();
session.connect();
if (process.env.SNAPSHOT) {
  // A heap snapshot taken under load (what retains what), then exit: `SNAPSHOT=/tmp/x.heapsnapshot`.
  const load = run(1e9).catch(() => undefined);
  await new Promise((r) => setTimeout(r, 1500));
  const { openSync, writeSync, closeSync } = await import('node:fs');
  const fd = openSync(process.env.SNAPSHOT, 'w');
  session.on('HeapProfiler.addHeapSnapshotChunk', (m) => writeSync(fd, m.params.chunk));
  await session.post('HeapProfiler.takeHeapSnapshot', { reportProgress: false } as never);
  closeSync(fd);
  console.log(`snapshot written to ${process.env.SNAPSHOT}`);
  sink.kill();
  process.exit(0);
  void load;
}
await session.post('HeapProfiler.startSampling', { samplingInterval: 256, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: process.env.ALL === '1' } as never);
await run(N);
const { profile } = (await session.post('HeapProfiler.stopSampling')) as unknown as { profile: { head: Node; samples: { size: number; nodeId: number }[] } };
session.disconnect();

// Bytes per stack (the innermost frames that name a file), sampled: each sample stands for its size.
const stacks = new Map<number, string>();
const walk = (n: Node, path: string[]): void => {
  const f = n.callFrame;
  const here = f.url ? `${f.functionName || '(anon)'} ${f.url.replace(/^.*\/(node_modules\/)?/, '')}:${f.lineNumber + 1}` : `${f.functionName || '(' + 'native' + ')'}`;
  const p = [...path, here];
  stacks.set(n.id, p.slice(-6).reverse().join(' < '));
  for (const c of n.children) walk(c, p);
};
walk(profile.head, []);
const bytes = new Map<string, number>();
let total = 0;
for (const s of profile.samples) {
  const k = stacks.get(s.nodeId) ?? '?';
  bytes.set(k, (bytes.get(k) ?? 0) + s.size);
  total += s.size;
}
console.log(`# tracing ${MODE}: ${N} requests c=${C}, ${process.execArgv.join(' ')}; sampled survivors of a scavenge: ${(total / N).toFixed(0)} B/request`);
for (const [k, b] of [...bytes].sort((x, y) => y[1] - x[1]).slice(0, Number(process.env.TOP ?? 30))) console.log(`${(b / N).toFixed(1).padStart(7)} B/req  ${k}`);

await pool.close();
await gateway.stop();
upstream.close();
sink.kill();
