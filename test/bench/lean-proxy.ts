// The gate of issue 15 items 2-3 (docs/perf.md "Lean upstream client, session 8"): the same node:http proxy over two
// upstream clients, so that only the client differs.
//   dispatch: an undici Pool with a raw dispatch handler (what kernel/upstream/direct-forward.ts does), ADR 0019's
//             deadlines (headers 15 s, body 5 min) on every request
//   lean:     kernel/upstream/h1-pool.ts (ADR 0073: keep-alive net.Sockets, the answer parsed in JavaScript), the same
//             deadlines (the gate ran the first prototype of it, since replaced by the kernel's)
//   leansrv:  the lean client behind a lean HTTP/1.1 server side instead of node:http (a prototype: `net` sockets, the
//             request head parsed in JavaScript, a Content-Length body read whole, the answer head written as one
//             string): the ceiling of replacing node:http's server side (docs/perf.md "Plain route server side,
//             session 10"). It serves what the bench sends; it is not a server for anything else.
// Usage: node test/bench/lean-proxy.ts PORT UPSTREAM_PORT dispatch|lean|leansrv   (prints `listening PORT` once ready)
// With plain-ab.ts: a checkout named `lean-dispatch` or `lean-lean` runs this file in that mode.
import { createServer } from 'node:http';
import { createServer as createNetServer } from 'node:net';
import type { Socket } from 'node:net';
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

/** One request of a lean connection: the answer written into the socket as it comes. */
class LeanServerForward implements H1Handler {
  private readonly conn: LeanServerConnection;
  private head = '';
  private chunked = false;
  private started = false;
  private resume: (() => void) | null = null;
  constructor(conn: LeanServerConnection) {
    this.conn = conn;
  }
  onConnect(): void {}
  onHeaders(status: number, raw: string[], resume: () => void): boolean {
    this.resume = resume;
    this.started = true;
    let head = `HTTP/1.1 ${status} ${STATUS[status] ?? 'unknown'}\r\n`;
    let length = false;
    for (let i = 0; i < raw.length; i += 2) {
      const name = raw[i]!.toLowerCase();
      if (HOP.has(name)) continue;
      if (name === 'content-length') length = true;
      head += `${name}: ${raw[i + 1]}\r\n`;
    }
    if (!length) {
      head += 'transfer-encoding: chunked\r\n';
      this.chunked = true;
    }
    this.head = `${head}connection: keep-alive\r\nkeep-alive: timeout=65\r\n\r\n`;
    return true;
  }
  private out(chunk: Buffer): boolean {
    const socket = this.conn.socket;
    if (this.head !== '') {
      socket.cork();
      socket.write(this.head, 'latin1');
      this.head = '';
      process.nextTick(uncork, socket);
    }
    if (!this.chunked) return socket.write(chunk);
    socket.write(`${chunk.length.toString(16)}\r\n`, 'latin1');
    socket.write(chunk);
    return socket.write('\r\n', 'latin1');
  }
  onData(chunk: Buffer): boolean {
    if (this.out(chunk)) return true;
    this.conn.socket.once('drain', () => this.resume?.());
    return false;
  }
  onEnd(last: Buffer): void {
    if (last.length) this.out(last);
    this.onComplete();
  }
  onComplete(): void {
    const socket = this.conn.socket;
    if (this.head !== '') socket.write(this.head, 'latin1');
    if (this.chunked) socket.write('0\r\n\r\n', 'latin1');
    this.head = '';
    this.conn.done();
  }
  onError(err: Error): void {
    const body = `bad gateway: ${err.message}\n`;
    if (this.started) return void this.conn.socket.destroy();
    this.conn.socket.write(`HTTP/1.1 502 Bad Gateway\r\ncontent-length: ${body.length}\r\n\r\n${body}`);
    this.conn.done();
  }
}

function uncork(socket: Socket): void {
  socket.uncork();
}

const STATUS: Record<number, string> = { 200: 'OK', 201: 'Created', 204: 'No Content', 404: 'Not Found' };

/** A client connection of the lean server: one request at a time, pipelined bytes kept until it is answered. */
class LeanServerConnection {
  readonly socket: Socket;
  private pending: Buffer | null = null;
  private busy = false;
  constructor(socket: Socket) {
    this.socket = socket;
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => {
      this.pending = this.pending === null ? chunk : Buffer.concat([this.pending, chunk]);
      if (!this.busy) this.next();
    });
    socket.on('error', () => socket.destroy());
  }
  done(): void {
    this.busy = false;
    if (this.pending !== null) this.next();
  }
  /** Parse one request from the pending bytes (head and Content-Length body) and forward it. */
  private next(): void {
    const data = this.pending!;
    const end = data.indexOf('\r\n\r\n');
    if (end === -1) return;
    const head = data.toString('latin1', 0, end);
    let eol = head.indexOf('\r\n');
    if (eol === -1) eol = head.length;
    const sp1 = head.indexOf(' ');
    const sp2 = head.indexOf(' ', sp1 + 1);
    if (sp1 <= 0 || sp2 <= sp1 || !head.startsWith('HTTP/1.1', sp2 + 1)) return void this.socket.destroy();
    const method = head.slice(0, sp1);
    const path = head.slice(sp1 + 1, sp2);
    const headers: Record<string, string> = {};
    let length = 0;
    for (let at = eol + 2; at < head.length; at = eol + 2) {
      eol = head.indexOf('\r\n', at);
      if (eol === -1) eol = head.length;
      const colon = head.indexOf(':', at);
      if (colon === -1 || colon > eol) return void this.socket.destroy();
      const name = head.slice(at, colon).toLowerCase();
      const value = head.slice(colon + 1, eol).trim();
      if (name === 'content-length') length = Number(value);
      else if (name === 'transfer-encoding') return void this.socket.destroy(); // not in the bench
      if (!HOP.has(name)) headers[name] = value;
    }
    const start = end + 4;
    if (data.length < start + length) return;
    const body = length > 0 ? data.subarray(start, start + length) : null;
    if (length > 0) headers['content-length'] = String(length);
    this.pending = data.length > start + length ? data.subarray(start + length) : null;
    this.busy = true;
    leanPool!.dispatch({ method, path, headers, body, headersTimeout: HEADERS_MS, bodyTimeout: BODY_MS }, new LeanServerForward(this));
  }
}

const undiciPool = mode === 'dispatch' ? new Pool(`http://127.0.0.1:${upstreamPort}`, { headersTimeout: 0, bodyTimeout: 0, keepAliveTimeout: 30_000 }) : null;
const leanPool = mode === 'lean' || mode === 'leansrv' ? new H1Pool('127.0.0.1', upstreamPort) : null;
if (undiciPool === null && leanPool === null) throw new Error(`mode: dispatch or lean, not ${mode}`);

const server = mode === 'leansrv' ? createNetServer((socket) => void new LeanServerConnection(socket)) : createServer({ requestTimeout: 0, keepAliveTimeout: 65_000 }, (req, res) => {
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
