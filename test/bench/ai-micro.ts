// The `ai` row in one process: a benchmark, not a test (docs/perf.md "The ai row, session 6").
//
//   node test/bench/ai-micro.ts [BASELINE_DIR...]   (AI_MICRO_REQUESTS per batch, default 2,000; AI_MICRO_ROUNDS, default 6)
//   AI_MICRO_GC=1 node --trace-gc-nvp test/bench/ai-micro.ts … | node test/bench/ai-micro-gc.ts   (KiB allocated per request)
//   AI_MICRO_HEAP=<dir> node test/bench/ai-micro.ts …   (a sampling heap profile per target, allocation sites)
//
// The fixed-answer upstream (test/bench/upstream.ts's answers), the gateway (the `ai` bench config: a `host` route and
// an `ai` route with `openAI` and `hostOverride`) and an undici client at concurrency 50 all run in this process, so
// the CPU time of a batch (process.cpuUsage) is client + gateway + upstream. The client's and the upstream's share is
// the same for every target, so the difference between the `ai` and `host` rows is what the LLM layer costs, and
// the difference between two checkouts' rows (each BASELINE_DIR's gateway loaded beside this one's, its own module
// graph) is a change's effect, measured in interleaved rounds on the same noise. Figures: µs per request, median and
// range of the rounds.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Pool } from 'undici';
import { stringify } from 'yaml';
import { CHAT_REQUEST, CHAT_STREAM_REQUEST, SMALL_ANSWER, STREAM_ANSWER } from './llm-bodies.ts';

const N = Number(process.env.AI_MICRO_REQUESTS) > 0 ? Number(process.env.AI_MICRO_REQUESTS) : 2000;
const ROUNDS = Number(process.env.AI_MICRO_ROUNDS) > 0 ? Number(process.env.AI_MICRO_ROUNDS) : 6;
const CONNECTIONS = 50;
const MODES = (process.env.AI_MICRO_MODES ?? 'ai,stream,host').split(',');
const HEADERS = { 'content-type': 'application/json', authorization: 'Bearer sk-bench' };

// The upstream: the answers of test/bench/upstream.ts for the chat path.
const small = Buffer.from(SMALL_ANSWER);
const streamed = Buffer.from(STREAM_ANSWER);
const upstream = createServer({ keepAliveTimeout: 65_000 }, (req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const s = Buffer.concat(chunks).includes('"stream":true');
    res.writeHead(200, { 'content-type': s ? 'text/event-stream' : 'application/json', 'content-length': String(s ? streamed.length : small.length) });
    res.end(s ? streamed : small);
  });
});
await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
const upstreamPort = (upstream.address() as AddressInfo).port;

const dir = mkdtempSync(join(tmpdir(), 'switchyard-ai-micro-'));
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));

interface Gw {
  readonly name: string;
  readonly port: number;
  stop(): Promise<void>;
}

/** A checkout's gateway, from its own module graph (its `switchyard` self-reference resolves to its own tree). */
async function startIn(root: string, name: string): Promise<Gw> {
  const kernel = (await import(pathToFileURL(join(root, 'kernel/index.ts')).href)) as typeof import('switchyard');
  const { fullPreset } = (await import(pathToFileURL(join(root, 'plugins/presets/full.ts')).href)) as typeof import('../../plugins/presets/full.ts');
  const { FIRST_PARTY_KEYS } = (await import(pathToFileURL(join(root, 'plugins/presets/catalog.ts')).href)) as typeof import('../../plugins/presets/catalog.ts');
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as AddressInfo).port;
  await new Promise<void>((r) => srv.close(() => r()));
  const file = join(dir, `${name.replace(/\W+/g, '_')}.yaml`);
  const host = { name: 'host', matches: [{ path: { pathPrefix: '/host' } }], backends: [{ host: `127.0.0.1:${upstreamPort}` }] };
  const ai = { name: 'ai', matches: [{ path: { pathPrefix: '/' } }], backends: [{ ai: { name: 'bench', provider: { openAI: {} }, hostOverride: `127.0.0.1:${upstreamPort}` } }] };
  writeFileSync(file, stringify({ config: { adminAddr: 'off', statsAddr: 'off', readinessAddr: 'off' }, binds: [{ port, listeners: [{ name: 'bench', routes: [host, ai] }] }] }));
  // The access log stays on (the bench's default) and goes nowhere, as a file write would cost the same for every row.
  const sink = new kernel.LogSink(() => undefined);
  const gateway = kernel.createGateway({ preset: fullPreset, knownKeys: FIRST_PARTY_KEYS, config: { file }, watch: false, env: process.env }, sink);
  await gateway.start();
  return { name, port, stop: () => gateway.stop() };
}

interface Target {
  readonly name: string;
  readonly pool: Pool;
  readonly path: string;
  readonly body: string;
  readonly answer: number;
  readonly us: number[];
}

/** N requests at CONNECTIONS in flight; the answers are read whole and checked. */
async function batch(t: Target, n: number): Promise<void> {
  let next = 0;
  const one = async (): Promise<void> => {
    while (next++ < n) {
      const res = await t.pool.request({ path: t.path, method: 'POST', headers: HEADERS, body: t.body });
      const text = await res.body.text();
      if (res.statusCode !== 200 || text.length !== t.answer) throw new Error(`${t.name}: ${res.statusCode} with ${text.length} bytes: ${text.slice(0, 200)}`);
    }
  };
  await Promise.all(Array.from({ length: CONNECTIONS }, one));
}

const here = resolve(import.meta.dirname, '../..');
const gateways = [await startIn(here, 'this'), ...(await Promise.all(process.argv.slice(2).map((d, i) => startIn(resolve(d), `baseline${process.argv.length > 3 ? i + 1 : ''} (${d})`))))];
const targets: Target[] = [];
for (const g of gateways) {
  const pool = new Pool(`http://127.0.0.1:${g.port}`, { connections: CONNECTIONS, keepAliveTimeout: 60_000 });
  const add = (mode: string, path: string, body: string, answer: number): void => void (MODES.includes(mode) && targets.push({ name: `${g.name} ${mode}`, pool, path, body, answer, us: [] }));
  add('ai', '/v1/chat/completions', CHAT_REQUEST, SMALL_ANSWER.length);
  add('stream', '/v1/chat/completions', CHAT_STREAM_REQUEST, STREAM_ANSWER.length);
  add('host', '/host/v1/chat/completions', CHAT_REQUEST, SMALL_ANSWER.length);
}

for (const t of targets) await batch(t, N); // warm-up: JIT, connections, series
if (process.env.AI_MICRO_GC) console.log('@@warm');
for (let round = 0; round < ROUNDS; round++) {
  for (const t of targets) {
    const c0 = process.cpuUsage();
    await batch(t, N);
    const c = process.cpuUsage(c0);
    t.us.push((c.user + c.system) / N);
    // With `--trace-gc-nvp`: a marker after each batch, so the collections' `allocated=` can be summed per batch.
    if (process.env.AI_MICRO_GC) console.log(`@@batch ${t.name}`);
  }
}

// AI_MICRO_HEAP=<dir>: one more batch per target under V8's sampling heap profiler, collected objects included, written
// as <dir>/<target>.heapprofile (Chrome DevTools opens it): what each target allocates, by allocation site.
if (process.env.AI_MICRO_HEAP) {
  const { Session } = await import('node:inspector/promises');
  const session = new Session();
  session.connect();
  for (const t of targets) {
    await session.post('HeapProfiler.startSampling', { samplingInterval: 256, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
    await batch(t, N);
    const { profile } = await session.post('HeapProfiler.stopSampling');
    writeFileSync(join(process.env.AI_MICRO_HEAP, `${t.name.replace(/\W+/g, '_')}.heapprofile`), JSON.stringify(profile));
  }
  session.disconnect();
}

const median = (a: number[]): number => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)]!;
console.log(`\n${N} requests per batch, ${ROUNDS} rounds, c=${CONNECTIONS}; CPU µs/request of the whole process (client + gateway + upstream)`);
console.log('| target | median | range | rounds |\n|---|---:|---:|---|');
for (const t of targets) console.log(`| ${t.name} | ${median(t.us).toFixed(1)} | ${Math.min(...t.us).toFixed(0)}-${Math.max(...t.us).toFixed(0)} | ${t.us.map((v) => v.toFixed(0)).join(', ')} |`);
for (const g of gateways) {
  const host = targets.find((t) => t.name === `${g.name} host`);
  if (!host) continue;
  for (const t of targets.filter((x) => x.name.startsWith(g.name + ' ') && x !== host)) {
    const d = t.us.map((v, i) => v - host.us[i]!);
    console.log(`${t.name} − host, per round: median ${median(d).toFixed(1)} µs (${Math.min(...d).toFixed(0)} to ${Math.max(...d).toFixed(0)})`);
  }
}
for (const pool of new Set(targets.map((t) => t.pool))) await pool.close();
for (const g of gateways) await g.stop();
upstream.close();
