// Tracing's whole per-request path without HTTP serving: the kernel's Tracing facade as the gateway drives it for a
// plain request (SERVER span around the handling, a CLIENT span per upstream attempt with its traceparent, the
// SERVER span's attributes at the end), 100% sampled, batches exported over OTLP/HTTP to otlp-sink.ts in a child
// process. Two builds of the kernel in one process, blocks interleaved, so a loaded machine shifts both alike:
// this checkout and another (`OLD=/path/to/checkout`, e.g. a worktree of the previous commit).
// Usage: OLD=/tmp/old node test/bench/tracing-path-micro.ts [rounds=9] [requests per block=4000]
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { median, startOtlpSink } from './tracing-fixtures.ts';

const [ROUNDS, PER_BLOCK] = [Number(process.argv[2] ?? 9), Number(process.argv[3] ?? 4000)];
const HERE = fileURLToPath(new URL('.', import.meta.url));
const { child: sink, port: sinkPort } = await startOtlpSink();
const logger = { warn: (m: string) => console.error(m) } as never;
const cfg = { url: `http://127.0.0.1:${sinkPort}/v1/traces`, protocol: 'http', headers: {}, randomRatio: 1, clientRatio: 1, resource: { 'service.name': 'bench' }, captureMessageContent: false } as never;

type T = {
  serve(ex: unknown, f: () => void): void;
  finish(ex: unknown): void;
  client(m: string, o: unknown, p: string, h: Record<string, unknown>): unknown;
  endClient(s: unknown, st: number): void;
  shutdown(): Promise<void>;
  // Since ADR 0062: a kernel-only route's span passed explicitly, without the async context.
  start?(ex: unknown): void;
  attempt?(m: string, o: unknown, p: string, h: Record<string, unknown>, extra: undefined, state: unknown): unknown;
};
const load = async (root: string): Promise<T> => (await import(join(root, 'kernel/telemetry/tracing-sdk.ts'))).startTracing(cfg, logger);
const variants: [string, T][] = [['this checkout', await load(join(HERE, '../..'))]];
if (process.env.OLD) variants.push([`OLD (${process.env.OLD})`, await load(process.env.OLD)]);

const route = { name: 'plain', listener: 'default', bind: 8080 };
const origin = { href: 'http://127.0.0.1:8081/', host: '127.0.0.1', port: 8081 };
async function block(t: T): Promise<number> {
  const start = process.cpuUsage();
  for (let i = 0; i < PER_BLOCK; i++) {
    const ex = {
      method: 'GET', path: '/plain/x', scheme: 'http', headers: { host: '127.0.0.1:8080', 'user-agent': 'bench' }, clientAuthority: '127.0.0.1:8080',
      sourceAddress: '127.0.0.1', sourcePort: 40000 + (i % 20000), req: { httpVersion: '1.1' }, route, matchedPrefix: '/plain', status: 200,
      errorMessage: undefined, requestId: `r${i}`, fields: undefined, span: undefined, traceParent: undefined, traceRoot: undefined,
    };
    if (t.start !== undefined) {
      // The plain route since ADR 0062: no async context, the SERVER span passed to the attempt.
      t.start(ex);
      const s = t.attempt!('GET', origin, '/plain/x', {}, undefined, ex);
      t.endClient(s, 200);
    } else {
      t.serve(ex, () => {
        const headers: Record<string, unknown> = {};
        const s = t.client('GET', origin, '/plain/x', headers);
        t.endClient(s, 200);
      });
    }
    t.finish(ex);
    // Yield as a server would between requests, so batches are exported (and their CPU counted) inside the block.
    if (i % 16 === 15) await new Promise(setImmediate);
  }
  const d = process.cpuUsage(start);
  return (d.user + d.system) / PER_BLOCK;
}
const pause = () => new Promise((r) => setTimeout(r, 1100)); // let the batch processor export between blocks
const got = new Map<string, number[]>(variants.map(([n]) => [n, []]));
for (let r = 0; r <= ROUNDS; r++) {
  for (const [name, t] of r % 2 ? [...variants].reverse() : variants) {
    const us = await block(t);
    await pause();
    if (r > 0) got.get(name)!.push(us);
  }
}
console.log(`# ${ROUNDS} rounds × ${PER_BLOCK} requests, Node ${process.version}, load ${(await import('node:os')).loadavg().map((x) => x.toFixed(1)).join(' ')}`);
console.log('| build | tracing µs CPU/request, median (range) |\n|---|---:|');
for (const [name, v] of got) console.log(`| ${name} | ${median(v).toFixed(1)} (${Math.min(...v).toFixed(1)}–${Math.max(...v).toFixed(1)}) |`);
for (const [, t] of variants) await t.shutdown();
sink.kill();
