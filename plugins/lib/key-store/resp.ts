// A small Redis client (RESP2 over one TCP connection, pipelined): the key store needs a handful of commands, and
// a full client library would be a dependency loaded by few. Reconnects on the next command after a drop.
import { connect } from 'node:net';
import type { Socket } from 'node:net';

export type RespValue = string | number | null | RespValue[];

export class RedisError extends Error {}

/** Parse one reply at `at`; undefined when the buffer does not hold all of it yet. */
function parse(buf: Buffer, at: number): { value: RespValue | RedisError; end: number } | undefined {
  if (at >= buf.length) return undefined;
  const eol = buf.indexOf('\r\n', at);
  if (eol === -1) return undefined;
  const type = buf[at];
  const line = buf.toString('utf8', at + 1, eol);
  const next = eol + 2;
  if (type === 43 /* + */) return { value: line, end: next };
  if (type === 45 /* - */) return { value: new RedisError(line), end: next };
  if (type === 58 /* : */) return { value: Number(line), end: next };
  if (type === 36 /* $ */) {
    const len = Number(line);
    if (len < 0) return { value: null, end: next };
    if (buf.length < next + len + 2) return undefined;
    return { value: buf.toString('utf8', next, next + len), end: next + len + 2 };
  }
  if (type === 42 /* * */) {
    const n = Number(line);
    if (n < 0) return { value: null, end: next };
    const items: RespValue[] = [];
    let pos = next;
    for (let i = 0; i < n; i++) {
      const item = parse(buf, pos);
      if (!item) return undefined;
      if (item.value instanceof RedisError) return { value: item.value, end: item.end };
      items.push(item.value);
      pos = item.end;
    }
    return { value: items, end: pos };
  }
  throw new RedisError(`unexpected reply byte ${type}`);
}

/** One command as one string (written UTF-8 encoded once): no Buffer per argument. */
function encode(args: readonly (string | number)[]): string {
  let out = `*${args.length}\r\n`;
  for (const a of args) {
    const v = typeof a === 'string' ? a : String(a);
    out += `$${Buffer.byteLength(v, 'utf8')}\r\n${v}\r\n`;
  }
  return out;
}

export class RespClient {
  private readonly host: string;
  private readonly port: number;
  private readonly setup: (string | number)[][];
  private socket: Socket | undefined;
  private connecting: Promise<Socket> | undefined;
  private readonly pending: { resolve(v: RespValue): void; reject(e: Error): void }[] = [];
  private buffer: Buffer = Buffer.alloc(0);
  private closed = false;

  /** `redis://[:password@]host[:port][/db]`. */
  constructor(url: string) {
    const u = new URL(url);
    this.host = u.hostname.replace(/^\[|\]$/g, '') || '127.0.0.1';
    this.port = Number(u.port || 6379);
    this.setup = [];
    const password = decodeURIComponent(u.password);
    const user = decodeURIComponent(u.username);
    if (password) this.setup.push(user ? ['AUTH', user, password] : ['AUTH', password]);
    const db = u.pathname.replace(/^\//, '');
    if (db) this.setup.push(['SELECT', Number(db)]);
  }

  private open(): Promise<Socket> {
    if (this.socket && !this.socket.destroyed) return Promise.resolve(this.socket);
    this.connecting ??= new Promise<Socket>((resolve, reject) => {
      const socket = connect({ host: this.host, port: this.port });
      socket.setNoDelay(true);
      socket.once('error', reject);
      socket.once('connect', () => {
        socket.off('error', reject);
        socket.on('error', () => undefined);
        socket.on('data', (d: Buffer) => this.onData(d));
        socket.on('close', () => this.onClose(socket));
        this.socket = socket;
        this.buffer = Buffer.alloc(0);
        resolve(socket);
      });
    }).finally(() => {
      this.connecting = undefined;
    });
    return this.connecting.then(async (s) => {
      // Setup commands go first on a fresh connection (their replies are awaited like any other).
      if (this.setup.length && (s as Socket & { ready?: boolean }).ready !== true) {
        (s as Socket & { ready?: boolean }).ready = true;
        for (const c of this.setup) await this.send(s, c);
      }
      return s;
    });
  }

  private onData(d: Buffer): void {
    this.buffer = this.buffer.length ? Buffer.concat([this.buffer, d]) : d;
    let at = 0;
    for (;;) {
      const r = parse(this.buffer, at);
      if (!r) break;
      at = r.end;
      const p = this.pending.shift();
      if (r.value instanceof RedisError) p?.reject(r.value);
      else p?.resolve(r.value);
    }
    this.buffer = at === this.buffer.length ? Buffer.alloc(0) : this.buffer.subarray(at);
  }

  private onClose(socket: Socket): void {
    if (this.socket === socket) this.socket = undefined;
    const err = new Error('redis connection closed');
    for (const p of this.pending.splice(0)) p.reject(err);
  }

  private send(socket: Socket, args: readonly (string | number)[]): Promise<RespValue> {
    return new Promise((resolve, reject) => {
      this.pending.push({ resolve, reject });
      socket.write(encode(args), 'utf8');
    });
  }

  async command(...args: (string | number)[]): Promise<RespValue> {
    if (this.closed) throw new Error('redis client closed');
    return this.send(await this.open(), args);
  }

  close(): void {
    this.closed = true;
    this.socket?.destroy();
  }
}
