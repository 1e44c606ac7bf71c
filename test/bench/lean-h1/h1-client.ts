// A lean HTTP/1.1 client for the gate prototype (docs/perf.md "Lean upstream client, session 8"): keep-alive
// `net.Socket`s per origin, the request head written as one string with the body, the answer parsed by
// h1-parser.ts, deadlines checked by one sweep per pool instead of timers per request.
import { connect } from 'node:net';
import type { Socket } from 'node:net';
import type { IncomingMessage } from 'node:http';
import { H1ResponseParser } from './h1-parser.ts';
import type { ResponseSink } from './h1-parser.ts';

export interface H1Handler {
  onHead(status: number, raw: string[]): void;
  /** False: pause until `resume()`. */
  onData(chunk: Buffer): boolean;
  onEnd(trailers: string[] | null): void;
  onError(err: Error): void;
}

export interface H1Request {
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer | IncomingMessage | null;
  headersTimeoutMs: number;
  bodyTimeoutMs: number;
}

class Conn implements ResponseSink {
  readonly socket: Socket;
  readonly parser = new H1ResponseParser();
  readonly pool: H1Pool;
  handler: H1Handler | null = null;
  /** performance.now() after which the current wait has failed; 0: none. */
  deadline = 0;
  bodyTimeoutMs = 0;
  idleUntil = 0;
  sawByte = false;

  constructor(pool: H1Pool, socket: Socket) {
    this.pool = pool;
    this.socket = socket;
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.read(chunk));
    socket.on('end', () => this.ended(null));
    socket.on('error', (err) => this.ended(err));
    socket.on('close', () => this.ended(null));
  }

  read(chunk: Buffer): void {
    if (this.handler === null) return void this.socket.destroy(); // bytes on an idle connection
    this.sawByte = true;
    if (this.bodyTimeoutMs > 0 && this.deadline !== 0) this.deadline = performance.now() + this.bodyTimeoutMs;
    try {
      if (this.parser.execute(chunk)) this.fail(new Error('upstream sent bytes after its answer'));
    } catch (err) {
      this.fail(err as Error);
    }
  }

  head(status: number, raw: string[]): void {
    this.deadline = this.bodyTimeoutMs > 0 ? performance.now() + this.bodyTimeoutMs : 0;
    this.handler!.onHead(status, raw);
  }

  data(chunk: Buffer): void {
    if (!this.handler!.onData(chunk)) this.socket.pause();
  }

  end(trailers: string[] | null): void {
    const handler = this.handler!;
    this.handler = null;
    this.deadline = 0;
    if (this.parser.reusable) this.pool.release(this);
    else this.socket.destroy();
    handler.onEnd(trailers);
  }

  fail(err: Error): void {
    const handler = this.handler;
    this.handler = null;
    this.socket.destroy();
    handler?.onError(err);
  }

  ended(err: Error | null): void {
    this.pool.forget(this);
    if (this.handler === null) return;
    if (err === null && this.parser.closed()) return;
    this.fail(err ?? new Error('upstream closed the connection before its answer ended'));
  }
}

const HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'te', 'trailer', 'upgrade', 'content-length']);

export class H1Pool {
  private readonly host: string;
  private readonly port: number;
  private readonly hostHeader: string;
  private readonly idle: Conn[] = [];
  private readonly all = new Set<Conn>();
  private readonly sweep: NodeJS.Timeout;

  constructor(host: string, port: number) {
    this.host = host;
    this.port = port;
    this.hostHeader = `${host}:${port}`;
    // One timer per pool: deadlines are checked twice a second (undici's own timers tick every 500 ms).
    this.sweep = setInterval(() => this.check(), 500).unref();
  }

  request(req: H1Request, handler: H1Handler): void {
    let conn = this.idle.pop();
    while (conn !== undefined && conn.socket.destroyed) conn = this.idle.pop();
    if (conn === undefined) {
      conn = new Conn(this, connect({ host: this.host, port: this.port }));
      this.all.add(conn);
    }
    conn.handler = handler;
    conn.sawByte = false;
    conn.bodyTimeoutMs = req.bodyTimeoutMs;
    conn.deadline = req.headersTimeoutMs > 0 ? performance.now() + req.headersTimeoutMs : 0;
    conn.parser.expect(conn, req.method === 'HEAD');
    let head = `${req.method} ${req.path} HTTP/1.1\r\n`;
    let host = false;
    for (const name in req.headers) {
      const v = req.headers[name];
      if (v === undefined || HOP.has(name)) continue;
      if (name === 'host') host = true;
      if (typeof v === 'string') head += `${name}: ${v}\r\n`;
      else for (const one of v) head += `${name}: ${one}\r\n`;
    }
    if (!host) head += `host: ${this.hostHeader}\r\n`;
    const body = req.body;
    const socket = conn.socket;
    if (body === null) return void socket.write(`${head}\r\n`, 'latin1');
    if (Buffer.isBuffer(body)) {
      socket.cork();
      socket.write(`${head}content-length: ${body.length}\r\n\r\n`, 'latin1');
      socket.write(body);
      socket.uncork();
      return;
    }
    const length = body.headers['content-length'];
    const chunked = length === undefined;
    socket.cork();
    socket.write(chunked ? `${head}transfer-encoding: chunked\r\n\r\n` : `${head}content-length: ${length}\r\n\r\n`, 'latin1');
    let corked = true;
    const uncork = (): void => {
      if (corked) {
        corked = false;
        socket.uncork();
      }
    };
    body.on('data', (c: Buffer) => {
      if (chunked) socket.write(`${c.length.toString(16)}\r\n`, 'latin1');
      const ok = socket.write(c);
      if (chunked) socket.write('\r\n', 'latin1');
      uncork();
      if (!ok) {
        body.pause();
        socket.once('drain', () => body.resume());
      }
    });
    body.on('end', () => {
      if (chunked) socket.write('0\r\n\r\n', 'latin1');
      uncork();
    });
  }

  resume(handler: H1Handler): void {
    for (const c of this.all) if (c.handler === handler) c.socket.resume();
  }

  release(conn: Conn): void {
    conn.idleUntil = performance.now() + 30_000;
    this.idle.push(conn);
  }

  forget(conn: Conn): void {
    this.all.delete(conn);
  }

  private check(): void {
    const now = performance.now();
    for (const c of this.all) {
      if (c.handler !== null && c.deadline !== 0 && now > c.deadline) c.fail(new Error('upstream timeout'));
      else if (c.handler === null && now > c.idleUntil) c.socket.destroy();
    }
  }

  close(): void {
    clearInterval(this.sweep);
    for (const c of this.all) c.socket.destroy();
  }
}
