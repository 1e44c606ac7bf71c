// writeHead(status, flatRawHeaders(raw)) against ProxyResponse.writeCheckedHead (ADR 0082) on nginx's answer head,
// no socket: what building the head costs per response (docs/perf.md "Plain route server side, session 10"). Each case
// runs in its own process under `--trace-gc-nvp`: bytes allocated per response are V8's own count, not heap deltas.
// A tool, not a test. Usage: node test/bench/checked-head-micro.ts [rounds 3] [responses 300000]
import { spawnSync } from 'node:child_process';
import { ProxyResponse } from '../../kernel/runtime/proxy-response.ts';
import { flatRawHeaders } from '../../kernel/runtime/reply-writer.ts';

const { ServerResponse, IncomingMessage } = process.getBuiltinModule('node:http');
const RAW = ['Server', 'nginx/1.22.1', 'Date', 'Thu, 26 Nov 2026 15:30:00 GMT', 'Content-Type', 'application/json', 'Content-Length', '220', 'Connection', 'keep-alive'];

type Res = InstanceType<typeof ServerResponse> & { _keepAliveTimeout: number };
const req = new IncomingMessage(null as never);
req.method = 'POST';
req.httpVersionMajor = 1;
req.httpVersionMinor = 1;
function made(Ctor: typeof ServerResponse): Res {
  const res = new Ctor(req) as Res;
  res.shouldKeepAlive = true;
  res._keepAliveTimeout = 65_000;
  return res;
}
const Proxy = ProxyResponse as unknown as typeof ServerResponse;
const CASES: Record<string, () => Res> = {
  construct: () => made(ServerResponse),
  writeHead: () => made(ServerResponse).writeHead(200, flatRawHeaders(RAW, undefined)) as Res,
  writeCheckedHead: () => {
    const res = made(Proxy);
    (res as unknown as ProxyResponse).writeCheckedHead(200, RAW);
    return res;
  },
};

const [, , first, second] = process.argv;
if (first === '--case') {
  const fn = CASES[second!]!;
  const n = Number(process.argv[4]);
  let keep: Res | undefined;
  for (let i = 0; i < 20_000; i++) keep = fn();
  const t0 = process.hrtime.bigint();
  process.stdout.write('START\n');
  for (let i = 0; i < n; i++) keep = fn();
  process.stdout.write(`END ${Number(process.hrtime.bigint() - t0) / n} ${keep ? '' : '.'}\n`);
} else {
  const rounds = Number(first ?? 3);
  const n = Number(second ?? 300_000);
  const rows = new Map<string, { ns: number[]; bytes: number[] }>();
  for (let r = 0; r < rounds; r++) {
    for (const name of Object.keys(CASES)) {
      const out = spawnSync(process.execPath, ['--trace-gc-nvp', import.meta.filename, '--case', name, String(n)], { encoding: 'utf8' }).stdout;
      const measured = out.slice(out.indexOf('START\n'));
      let bytes = 0;
      for (const m of measured.matchAll(/ allocated=(\d+) /g)) bytes += Number(m[1]);
      const ns = Number(/END ([\d.]+)/.exec(measured)?.[1]);
      const row = rows.get(name) ?? { ns: [], bytes: [] };
      row.ns.push(ns);
      row.bytes.push(bytes / n);
      rows.set(name, row);
    }
  }
  const median = (a: number[]): number => [...a].sort((x, y) => x - y)[a.length >> 1]!;
  for (const [name, row] of rows) console.log(`${name}: ${median(row.bytes).toFixed(0)} bytes/response, ${median(row.ns).toFixed(0)} ns (${row.ns.map((x) => x.toFixed(0)).join(', ')})`);
}
