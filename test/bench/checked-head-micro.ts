// writeHead(status, flat list) against ProxyResponse.writeCheckedHead on the nginx answer's head, no socket: the head
// string node:http builds, per response (docs/perf.md "Plain route server side, session 10"). A tool, not a test.
// Usage: node --expose-gc --max-semi-space-size=64 test/bench/checked-head-micro.ts [rounds 7] [n 200000]
// Bytes per response: heap growth over 1,000 responses between two collections (no scavenge in between).
import { ProxyResponse } from '../../kernel/runtime/proxy-response.ts';
import { flatRawHeaders } from '../../kernel/runtime/reply-writer.ts';

const { ServerResponse, IncomingMessage } = process.getBuiltinModule('node:http');
const RAW = ['Server', 'nginx/1.22.1', 'Date', 'Thu, 26 Nov 2026 15:30:00 GMT', 'Content-Type', 'application/json', 'Content-Length', '220', 'Connection', 'keep-alive'];
const req = new IncomingMessage(null as never);
req.method = 'POST';
req.httpVersionMajor = 1;
req.httpVersionMinor = 1;
const rounds = Number(process.argv[2] ?? 7);
const n = Number(process.argv[3] ?? 200_000);

type Case = [string, () => void];
let sink = 0;
const cases: Case[] = [
  ['plain  writeHead', () => { const r = new ServerResponse(req); r.writeHead(200, flatRawHeaders(RAW, undefined)); sink += r.getHeaderNames.length; }],
  ['proxy  writeHead', () => { const r = new ProxyResponse(req); r.writeHead(200, flatRawHeaders(RAW, undefined)); sink += r.getHeaderNames.length; }],
  ['proxy  checked  ', () => { const r = new ProxyResponse(req); r.writeCheckedHead(200, RAW); sink += r.getHeaderNames.length; }],
  ['plain  new only ', () => { const r = new ServerResponse(req); sink += r.getHeaderNames.length; }],
  ['proxy  new only ', () => { const r = new ProxyResponse(req); sink += r.getHeaderNames.length; }],
];
const gc = (globalThis as { gc?: () => void }).gc!;
const results = new Map<string, { ns: number[]; bytes: number[] }>();
for (let r = 0; r < rounds; r++) {
  for (const [name, fn] of r % 2 ? [...cases].reverse() : cases) {
    for (let i = 0; i < 2000; i++) fn();
    gc();
    const h0 = process.memoryUsage().heapUsed;
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < n; i++) fn();
    const ns = Number(process.hrtime.bigint() - t0) / n;
    gc();
    const b0 = process.memoryUsage().heapUsed;
    for (let i = 0; i < 1000; i++) fn();
    const bytes = (process.memoryUsage().heapUsed - b0) / 1000;
    const e = results.get(name) ?? { ns: [], bytes: [] };
    e.ns.push(ns);
    e.bytes.push(bytes);
    results.set(name, e);
    void h0;
  }
}
const median = (a: number[]): number => [...a].sort((x, y) => x - y)[a.length >> 1]!;
for (const [name, e] of results) console.log(`${name}: ${median(e.ns).toFixed(0)} ns (${e.ns.map((x) => x.toFixed(0)).join(' ')}), ${median(e.bytes).toFixed(0)} bytes`);
console.log(sink > 0 ? '' : '.');
