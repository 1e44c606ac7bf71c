// The lean upstream client's head parsing (ADR 0073): a micro-benchmark, not a test.
//
//   node test/bench/h1-parser-micro.ts [/path/to/baseline-checkout] [rounds]   (ONLY=response|request|drip: one case)
//
// Three cases, each timed as CPU (process.cpuUsage) per operation: an nginx answer's 9-header head in one read, a
// request head with 10 headers, and a 16 KiB response head dripped one byte per read. With a baseline checkout its
// kernel/upstream/h1-*.ts run the same cases; the two alternate round by round (order swapped each round), so the
// machine's noise hits both; every round's ratio and the median and range are printed.
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { IncomingHttpHeaders } from 'node:http';

interface Sink {
  head(status: number, raw: string[]): void;
  data(chunk: Buffer): void;
  end(trailers: string[] | null): void;
  last(chunk: Buffer): void;
}
interface Parser {
  expect(sink: Sink, headRequest: boolean): void;
  execute(chunk: Buffer): boolean;
}
interface Impl {
  name: string;
  Parser: new () => Parser;
  requestHead: (method: string, path: string, headers: IncomingHttpHeaders) => string;
}

async function load(name: string, root: string): Promise<Impl> {
  const p = (await import(pathToFileURL(resolve(root, 'kernel/upstream/h1-parser.ts')).href)) as { H1ResponseParser: new () => Parser };
  const r = (await import(pathToFileURL(resolve(root, 'kernel/upstream/h1-request-head.ts')).href)) as Pick<Impl, 'requestHead'>;
  return { name, Parser: p.H1ResponseParser, requestHead: r.requestHead };
}

const NGINX = Buffer.from(
  'HTTP/1.1 200 OK\r\nServer: nginx/1.24.0\r\nDate: Thu, 26 Nov 2026 10:00:00 GMT\r\nContent-Type: application/json\r\n' +
    'Content-Length: 220\r\nConnection: keep-alive\r\nKeep-Alive: timeout=60\r\nLast-Modified: Thu, 26 Nov 2026 09:00:00 GMT\r\n' +
    'ETag: "6745a1b0-dc"\r\nAccept-Ranges: bytes\r\n\r\n' + 'x'.repeat(220),
  'latin1',
);
const REQ_HEADERS: IncomingHttpHeaders = {
  host: 'api.example.com',
  'user-agent': 'bench/1.0',
  accept: 'application/json',
  'content-type': 'application/json',
  'content-length': '220',
  'x-request-id': '3f2a9c1e-4b7d-4e8a-9c1f-2b3d4e5f6a7b',
  'x-forwarded-for': '10.0.0.1',
  'x-forwarded-proto': 'http',
  authorization: 'Bearer abcdefghijklmnopqrstuvwxyz0123456789',
  'accept-encoding': 'gzip, deflate',
};
const DRIP = (() => {
  const start = 'HTTP/1.1 200 OK\r\nX-Big: ';
  const rest = '\r\nContent-Length: 0\r\n\r\n';
  const all = Buffer.from(`${start}${'a'.repeat(16 * 1024 - start.length - rest.length)}${rest}`, 'latin1');
  return Array.from({ length: all.length }, (_, i) => all.subarray(i, i + 1));
})();

const sink: Sink = { head() {}, data() {}, end() {}, last() {} };

const cases: { name: string; n: number; run: (impl: Impl, n: number) => void }[] = [
  {
    name: 'response head, nginx, 9 headers (µs)',
    n: 100_000,
    run(impl, n) {
      const p = new impl.Parser();
      for (let i = 0; i < n; i++) {
        p.expect(sink, false);
        p.execute(NGINX);
      }
    },
  },
  {
    name: 'request head, 10 headers (µs)',
    n: 100_000,
    run(impl, n) {
      let len = 0;
      for (let i = 0; i < n; i++) len += impl.requestHead('POST', '/v1/things?x=1', REQ_HEADERS).length;
      if (len === 0) throw new Error('unreachable');
    },
  },
  {
    name: 'drip: 16 KiB head dripped a byte per read (µs per head)',
    n: 20,
    run(impl, n) {
      const p = new impl.Parser();
      for (let i = 0; i < n; i++) {
        p.expect(sink, false);
        for (const b of DRIP) p.execute(b);
      }
    },
  },
];

function cpu(fn: () => void): number {
  const t = process.cpuUsage();
  fn();
  const d = process.cpuUsage(t);
  return d.user + d.system;
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
const fmt = (x: number): string => (x < 10 ? x.toFixed(2) : x.toFixed(0));

const impls = [await load('this', '.')];
if (process.argv[2] !== undefined) impls.unshift(await load('base', process.argv[2]));
const rounds = Number(process.argv[3] ?? 9);

for (const c of cases) {
  if (process.env.ONLY !== undefined && !c.name.startsWith(process.env.ONLY)) continue;
  for (const impl of impls) c.run(impl, Math.ceil(c.n / 5)); // warm up
  const per = impls.map(() => [] as number[]);
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 === 0 ? impls.map((_, i) => i) : impls.map((_, i) => impls.length - 1 - i);
    for (const i of order) per[i]!.push(cpu(() => c.run(impls[i]!, c.n)) / c.n);
  }
  console.log(`\n${c.name}`);
  impls.forEach((impl, i) => console.log(`  ${impl.name}: median ${fmt(median(per[i]!))}, range ${fmt(Math.min(...per[i]!))}-${fmt(Math.max(...per[i]!))}`));
  if (impls.length === 2) console.log(`  this ÷ base per round: ${per[1]!.map((x, r) => (x / per[0]![r]!).toFixed(2)).join(', ')}`);
}
