// The gate of issue 15 items 2-3 (docs/perf.md "Lean upstream client, session 8"): the same node:http proxy over two
// upstream clients, so that only the client differs.
//   dispatch: an undici Pool with a raw dispatch handler (what kernel/upstream/direct-forward.ts does), ADR 0019's
//             deadlines (headers 15 s, body 5 min) on every request
//   lean:     kernel/upstream/h1-pool.ts (ADR 0073: keep-alive net.Sockets, the answer parsed in JavaScript), the same
//             deadlines (the gate ran the first prototype of it, since replaced by the kernel's)
// Usage: node test/bench/lean-proxy.ts PORT UPSTREAM_PORT dispatch|lean   (prints `listening PORT` once ready)
// With plain-ab.ts: a checkout named `lean-dispatch` or `lean-lean` runs this file in that mode.
import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Pool } from 'undici';
import type { Dispatcher } from 'undici';
import { H1Pool } from '../../kernel/upstream/h1-pool.ts';
import type { H1Handler } from '../../kernel/upstream/h1-connection.ts';

const [port, upstreamPort, mode] = [Number(process.argv[2] ?? 0), Number(process.argv[3]), process.argv[4] ?? 'lean'];
const HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'te', 'trailer', 'upgrade']);
const HEADERS_MS = 15_000;
const BODY_MS = 300_000;

function strip(h: IncomingMessage['headers']): void {
  for (const name of HOP) if (h[name] !== undefined) delete h[name];
}

/** The answer's raw headers as the flat list writeHead takes, hop-by-hop ones left out. */
function flat(raw: readonly (Buffer | string)[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!.toString('latin1').toLowerCase();
    if (!HOP.has(name)) out.push(name, raw[i + 1]!.toString('latin1'));
  }
  return out;
}

function badGateway(res: ServerResponse, err: Error): void {
  if (res.headersSent || res.destroyed) return void res.destroy();
  res.writeHead(502, { 'content-type': 'text/plain' }).end(`bad gateway: ${err.message}\n`);
}

/** Writes an upstream answer into the client's response with backpressure: what both clients' handlers share. */
class ResponseForward {
  protected readonly res: ServerResponse;
  protected resume: (() => void) | null = null;
  constructor(res: ServerResponse) {
    this.res = res;
  }
  protected head(status: number, raw: Buffer[] | string[], resume: () => void): boolean {
    this.resume = resume;
    this.res.writeHead(status, flat(raw));
    return true;
  }
  onData(chunk: Buffer): boolean {
    if (this.res.write(chunk)) return true;
    this.res.once('drain', () => this.resume?.());
    return false;
  }
  onComplete(): void {
    this.res.end();
  }
  onError(err: Error): void {
    badGateway(this.res, err);
  }
}

class UndiciForward extends ResponseForward implements Dispatcher.DispatchHandler {
  private abort: ((err?: Error) => void) | null = null;
  onConnect(abort: (err?: Error) => void): void {
    this.abort = abort;
  }
  onHeaders(status: number, raw: Buffer[], resume: () => void): boolean {
    return status < 200 ? true : this.head(status, raw, resume);
  }
}

class LeanForward extends ResponseForward implements H1Handler {
  onConnect(): void {}
  onHeaders(status: number, raw: string[], resume: () => void): boolean {
    return this.head(status, raw, resume);
  }
  onEnd(last: Buffer): void {
    this.res.end(last);
  }
}

const undiciPool = mode === 'dispatch' ? new Pool(`http://127.0.0.1:${upstreamPort}`, { headersTimeout: 0, bodyTimeout: 0, keepAliveTimeout: 30_000 }) : null;
const leanPool = mode === 'lean' ? new H1Pool('127.0.0.1', upstreamPort) : null;
if (undiciPool === null && leanPool === null) throw new Error(`mode: dispatch or lean, not ${mode}`);

const server = createServer({ requestTimeout: 0, keepAliveTimeout: 65_000 }, (req, res) => {
  const headers = req.headers;
  const hasBody = headers['content-length'] !== undefined ? headers['content-length'] !== '0' : headers['transfer-encoding'] !== undefined;
  strip(headers);
  if (undiciPool !== null) {
    const path = req.url ?? '/';
    undiciPool.dispatch({ path, method: req.method as Dispatcher.HttpMethod, headers, body: hasBody ? req : null, headersTimeout: HEADERS_MS, bodyTimeout: BODY_MS }, new UndiciForward(res));
  } else {
    leanPool!.dispatch({ method: req.method!, path: req.url ?? '/', headers, body: hasBody ? req : null, headersTimeout: HEADERS_MS, bodyTimeout: BODY_MS }, new LeanForward(res));
  }
});
server.listen(port, '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(`listening ${typeof address === 'object' && address ? address.port : port}\n`);
});
for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, () => process.exit(0));
