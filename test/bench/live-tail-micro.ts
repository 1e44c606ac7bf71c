// The live tail's cost per request without HTTP (issue 12 "Targets": a tail of 1,000 req/s slows the data plane by
// ≤ 5%): the access log recording a plain request (JSON line to a sink that drops it), alone and with the admin UI's
// TailHub attached (the access log's tap builds the tail event; every 250 requests the hub's flush serializes the
// batch and writes it to a stand-in response, as its 250 ms timer does at 1,000 req/s). Blocks interleaved in one
// process; CPU time per request.
// Usage: node test/bench/live-tail-micro.ts [rounds=9] [requests per block=20000]
import { AccessLog } from '../../kernel/telemetry/access-log.ts';
import type { LoggedExchange } from '../../kernel/telemetry/access-log.ts';
import { TailHub } from '../../kernel/admin/ui/tail-hub.ts';

const [ROUNDS, PER_BLOCK] = [Number(process.argv[2] ?? 9), Number(process.argv[3] ?? 20000)];
const sink = { push: () => undefined } as never;
const route = { name: 'plain', listener: 'default', bind: 8080 };
const exchange = (i: number): LoggedExchange =>
  ({
    route, sourceAddress: '127.0.0.1', method: 'GET', clientAuthority: '127.0.0.1:8080', originalUrl: `/plain/${i}`, status: 200, protocol: 'http',
    requestId: `0b6f3a1e-${i}`, attempts: 1, errorMessage: undefined, fields: undefined, span: undefined, replyHeaders: {},
  }) as unknown as LoggedExchange;

const plain = new AccessLog(sink, true, 'json');
const tailed = new AccessLog(sink, true, 'json');
let written = 0;
const hub = new TailHub({ tail: (listener: never) => ((tailed.tap = listener), () => (tailed.tap = null)) } as never);
const res = { writeHead: () => res, write: (s: string) => ((written += s.length), true), writableLength: 0, on: () => res, end: () => res };
hub.attach({ on: () => undefined } as never, res as never);
const flush = (hub as unknown as { flush(): void }).flush.bind(hub);

function block(log: AccessLog, withTail: boolean): number {
  const t = process.cpuUsage();
  for (let i = 0; i < PER_BLOCK; i++) {
    log.record(exchange(i), 0.42);
    if (withTail && i % 250 === 249) flush();
  }
  const d = process.cpuUsage(t);
  return ((d.user + d.system) / PER_BLOCK) * 1000;
}
const got = { 'access log only': [] as number[], 'access log + live tail': [] as number[] };
for (let r = 0; r <= ROUNDS; r++) {
  const a = r % 2 ? block(tailed, true) : block(plain, false);
  const b = r % 2 ? block(plain, false) : block(tailed, true);
  if (r === 0) continue;
  got['access log only'].push(r % 2 ? b : a);
  got['access log + live tail'].push(r % 2 ? a : b);
}
const median = (a: number[]) => [...a].sort((x, y) => x - y)[a.length >> 1]!;
const os = await import('node:os');
console.log(`# ${ROUNDS} rounds × ${PER_BLOCK} requests, Node ${process.version}, load ${os.loadavg().map((x) => x.toFixed(1)).join(' ')}`);
console.log('| variant | ns CPU/request, median (range) |\n|---|---:|');
for (const [k, v] of Object.entries(got)) console.log(`| ${k} | ${median(v).toFixed(0)} (${Math.min(...v).toFixed(0)}–${Math.max(...v).toFixed(0)}) |`);
const added = median(got['access log + live tail'].map((t, i) => t - got['access log only'][i]!));
console.log(`the tail adds ${added.toFixed(0)} ns CPU per carried request: ${((added * 1000) / 1e9 * 100).toFixed(2)} % of one core at 1,000 req/s (${(written / 1024 / 1024).toFixed(1)} MiB written)`);
process.exit(0);
