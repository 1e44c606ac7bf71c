// The access log's text line, a micro-benchmark, not a test (docs/perf.md "Plain route CPU, session 5").
//
//   node [--max-semi-space-size=64 --expose-gc] test/bench/access-log.ts [BASELINE_DIR]
//
// Formats the `request` line of a plain-route request (`AccessLog.record`) and flushes every 12 lines, as under
// load (about 12 lines per event-loop turn at 50 connections), into a sink that encodes the chunk as the file
// write does. With BASELINE_DIR (another checkout), its kernel/telemetry modules run in interleaved rounds
// beside this one's. CPU time (process.cpuUsage), not wall time: the machine is shared. Median and range of 7 rounds.
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

interface Sink {
  push(line: string): void;
  flush(): void;
}
interface Log {
  record(ex: unknown, durationMs: number): void;
}
interface Mods {
  LogSink: (new (write: (chunk: string) => void) => Sink) & { toBytes?: (write: (chunk: Buffer) => void) => Sink };
  AccessLog: new (sink: Sink, enabled: boolean, format: 'json' | 'text') => Log;
}

async function load(dir: string): Promise<Mods> {
  const url = (f: string): string => pathToFileURL(join(dir, 'kernel/telemetry', f)).href;
  const [{ LogSink }, { AccessLog }] = await Promise.all([import(url('logger.ts')), import(url('access-log.ts'))]);
  return { LogSink, AccessLog };
}

const route = Object.freeze({ name: 'host', key: 'bench/host', listener: 'bench', bind: 3000 });
let n = 0;
/** What the access log reads of a finished plain-route request. */
function exchange(): unknown {
  n++;
  return {
    route,
    sourceAddress: '127.0.0.1',
    method: 'POST',
    clientAuthority: '127.0.0.1:3000',
    originalUrl: '/small/v1/chat/completions',
    status: 200,
    protocol: 'http',
    requestId: `1f2e3d4c5b6a-${n.toString(36)}`,
    span: undefined,
    attempts: 1,
    errorMessage: undefined,
    fields: undefined,
  };
}

let bytes = 0;
function run(m: Mods, lines: number): number {
  // The sink as the gateway makes it: Buffers to stdout where the checkout has them, else strings.
  const sink = m.LogSink.toBytes ? m.LogSink.toBytes((chunk) => void (bytes += chunk.length)) : new m.LogSink((chunk) => void (bytes += Buffer.byteLength(chunk)));
  const log = new m.AccessLog(sink, true, 'text');
  const exchanges = Array.from({ length: 12 }, exchange);
  const c0 = process.cpuUsage();
  for (let i = 0; i < lines; i++) {
    log.record(exchanges[i % 12], 0.5 + (i % 1000) / 7);
    if (i % 12 === 11) sink.flush();
  }
  const c = process.cpuUsage(c0);
  return ((c.user + c.system) * 1000) / lines;
}

/** Heap bytes allocated per line: the heap's growth over 10,000 lines with no collection between (run with
 *  --max-semi-space-size=64 --expose-gc, else a scavenge may run in between and the figure is skipped). */
function allocated(m: Mods): number | undefined {
  const g = (globalThis as { gc?: () => void }).gc;
  if (g === undefined) return undefined;
  const sink = m.LogSink.toBytes ? m.LogSink.toBytes((chunk) => void (bytes += chunk.length)) : new m.LogSink((chunk) => void (bytes += Buffer.byteLength(chunk)));
  const log = new m.AccessLog(sink, true, 'text');
  const exchanges = Array.from({ length: 12 }, exchange);
  g();
  const h0 = process.memoryUsage().heapUsed;
  for (let i = 0; i < 10_000; i++) {
    log.record(exchanges[i % 12], 0.5 + (i % 1000) / 7);
    if (i % 12 === 11) sink.flush();
  }
  return (process.memoryUsage().heapUsed - h0) / 10_000;
}

const here = resolve(import.meta.dirname, '../..');
const sides: [string, Mods][] = [['this checkout', await load(here)]];
if (process.argv[2]) sides.push([`baseline ${process.argv[2]}`, await load(resolve(process.argv[2]))]);
const results = new Map<string, number[]>(sides.map(([name]) => [name, []]));
for (const [, m] of sides) run(m, 200_000); // warm-up
for (let round = 0; round < 7; round++) for (const [name, m] of sides) results.get(name)!.push(run(m, 300_000));
for (const [name, ns] of results) {
  const sorted = [...ns].sort((a, b) => a - b);
  console.log(`${name}: ${sorted[3]!.toFixed(0)} ns per line (range ${sorted[0]!.toFixed(0)}-${sorted[6]!.toFixed(0)})`);
}
for (const [name, m] of sides) {
  const a = [0, 1, 2].map(() => allocated(m));
  if (a[0] !== undefined) console.log(`${name}: ${a.map((x) => x!.toFixed(0)).join(' / ')} heap bytes allocated per line`);
}
if (bytes === 0) console.log('nothing written?');
