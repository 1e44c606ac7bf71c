// A small Redis client (RESP2 over one TCP connection, pipelined): the key store needs a handful of commands, and
// a full client library would be a dependency loaded by few. Reconnects on the next command after a drop. Commands
// queued while others await their replies go in one write at the end of the event-loop turn (ADR 0101).
import { connect } from 'node:net';
import type { Socket } from 'node:net';

export type RespValue = string | number | null | RespValue[];

export class RedisError extends Error {}

/**
 * Bytes of a reply buffered before it parses (the key store's largest is the id set of every key: about 4 MiB for
 * 100,000 keys). An address that sends more, or bytes that are not RESP, is not Redis: its connection is closed and
 * the commands waiting on it fail, instead of the gateway buffering without end or throwing from a socket listener.
 */
export const MAX_REPLY_BYTES = 64 * 1024 * 1024;
/**
 * Longest a command waits for Redis to answer anything: a hung server (or a stalled proxy in front of it) fails the
 * waiting commands and loses its connection, and the next command connects again. Redis answers in microseconds; a
 * request held for minutes by a store that stopped answering was a request the gateway never finished.
 */
export const REPLY_TIMEOUT_MS = 5000;
/**
 * Longest a connection attempt may take (Envoy's default `connect_timeout`, and the reply deadline): a Redis host that
 * drops handshakes (gone from the network, a firewall dropping SYNs) held every key lookup for the kernel's retries,
 * about 2 min on Linux, each time the connection was made again. The commands waiting on the attempt fail.
 */
export const CONNECT_TIMEOUT_MS = 5000;

const EMPTY = Buffer.alloc(0);

/**
 * How far the walk over a reply's framing has got, kept across chunks so that a large array reply arriving in many
 * chunks is walked once in all (re-walking it from its start on every chunk was quadratic). Positions are offsets in
 * the buffer of unparsed bytes; `left` holds how many items each open array still lacks (empty: `pos` starts a reply).
 */
class Walk {
  /** The element read next. */
  pos = 0;
  left: number[] = [];
  /** Where looking for the end of the line at `pos` goes on (a long line is scanned once, too). */
  scanned = 0;
  /** Set when {@link complete} returns -1: the buffer length it needs at least (0: any more bytes). */
  needed = 0;

  reset(): void {
    this.pos = 0;
    this.left.length = 0;
    this.scanned = 0;
    this.needed = 0;
  }

  /** The first `by` bytes of the buffer were dropped. */
  shift(by: number): void {
    this.pos -= by;
    this.scanned = Math.max(0, this.scanned - by);
  }
}

/**
 * Go on with the walk over the framing of the reply at `walk.pos`: where the reply ends, or -1 when the buffer does
 * not hold all of it yet (the walk then stays where it stopped). Decodes nothing: a large reply is decoded once,
 * when whole. Throws a RedisError on bytes that are not RESP and on a bulk string declared larger than the cap.
 */
function complete(buf: Buffer, walk: Walk): number {
  const left = walk.left;
  walk.needed = 0;
  for (;;) {
    const at = walk.pos;
    const eol = buf.indexOf('\r\n', Math.max(at, walk.scanned));
    if (eol === -1) {
      walk.scanned = Math.max(at, buf.length - 1);
      return -1;
    }
    const type = buf[at];
    let next = eol + 2;
    if (type !== 43 /* + */ && type !== 45 /* - */ && type !== 58 /* : */) {
      if (type !== 36 /* $ */ && type !== 42 /* * */) throw new RedisError(`unexpected reply byte ${type}: not a RESP reply; connection closed`);
      const n = Number(buf.toString('latin1', at + 1, eol));
      if (!Number.isInteger(n)) throw new RedisError('a reply length that is not a number: not a RESP reply; connection closed');
      if (n > 0 && type === 42) {
        left.push(n);
        walk.pos = next;
        continue;
      }
      if (n >= 0 && type === 36) {
        if (n > MAX_REPLY_BYTES) throw new RedisError(`a bulk reply of ${n} bytes is larger than 64 MiB; connection closed`);
        if (buf.length < next + n + 2) {
          walk.needed = next + n + 2;
          return -1;
        }
        next += n + 2;
      }
    }
    // An element ends at `next`, and so do the arrays it was the last item of.
    walk.pos = next;
    while (left.length > 0 && --left[left.length - 1]! === 0) left.pop();
    if (left.length === 0) return next;
  }
}

/** Parse one reply at `at`, which {@link complete} found whole. */
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
  throw new RedisError(`unexpected reply byte ${type}: not a RESP reply; connection closed`);
}

/**
 * One command as one string (written UTF-8 encoded once): no Buffer per argument. A number's text is ASCII, so its
 * length is its byte count: most of a reservation script's arguments are numbers, and a byteLength call each was
 * about a third of the encoding (ADR 0101).
 */
function encode(args: readonly (string | number)[]): string {
  let out = `*${args.length}\r\n`;
  for (const a of args) {
    if (typeof a === 'number') {
      const v = String(a);
      out += `$${v.length}\r\n${v}\r\n`;
    } else out += `$${Buffer.byteLength(a, 'utf8')}\r\n${a}\r\n`;
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
  /**
   * Bytes received and not parsed yet: `pending[0..size)`, a buffer grown by doubling (a large reply arriving in
   * many chunks is copied a bounded number of times, not once per chunk). Empty between replies.
   */
  private unparsed: Buffer = EMPTY;
  private size = 0;
  /** Bytes `unparsed` must hold before parsing again is worth it (a bulk reply's declared end). */
  private need = 0;
  /** The framing walk of the reply at the start of `unparsed`, where the last chunk left it. */
  private readonly walk = new Walk();
  private closed = false;
  /**
   * Commands queued (`queue`) for `held`'s socket and not written yet: written in one write with the next `command`,
   * or at the end of this event-loop turn. Each write is a system call and a wake-up of Redis, and of the loopback's
   * receive path on the same cores: with many keys the key lookups of a turn were a write each.
   */
  private held = '';
  private heldOn: Socket | undefined;
  private flushing = false;
  private readonly flushHeld = (): void => {
    this.flushing = false;
    this.writeHeld('');
  };
  private readonly replyTimeoutMs: number;
  private readonly connectTimeoutMs: number;
  /**
   * When the connection last made progress: a reply arrived, or a command was sent with none waiting. A watchdog
   * (one timer per connection, not one per command) fails the waiting commands when it is older than the deadline.
   */
  private progressAt = 0;
  private watchdog: NodeJS.Timeout | undefined;

  /** `redis://[:password@]host[:port][/db]`; `replyTimeoutMs` (REPLY_TIMEOUT_MS), `connectTimeoutMs` (CONNECT_TIMEOUT_MS) for tests. */
  constructor(url: string, options: { replyTimeoutMs?: number; connectTimeoutMs?: number } = {}) {
    this.replyTimeoutMs = options.replyTimeoutMs ?? REPLY_TIMEOUT_MS;
    this.connectTimeoutMs = options.connectTimeoutMs ?? CONNECT_TIMEOUT_MS;
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
      const deadline = setTimeout(() => {
        socket.destroy(new RedisError(`could not connect to redis ${this.host}:${this.port} within ${this.connectTimeoutMs} ms`));
      }, this.connectTimeoutMs);
      deadline.unref();
      const failed = (err: Error): void => {
        clearTimeout(deadline);
        reject(err);
      };
      socket.once('error', failed);
      socket.once('connect', () => {
        clearTimeout(deadline);
        socket.off('error', failed);
        // Closed while connecting (the store's open deadline): this connection is not kept.
        if (this.closed) {
          socket.destroy();
          return reject(new Error('redis client closed'));
        }
        socket.on('error', () => undefined);
        socket.on('data', (d: Buffer) => this.onData(socket, d));
        socket.on('close', () => this.onClose(socket));
        this.socket = socket;
        this.reset();
        this.watch(socket);
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

  /** Check `socket`'s progress every half deadline while it is the connection; unref'd (no process kept alive). */
  private watch(socket: Socket): void {
    clearInterval(this.watchdog);
    this.watchdog = setInterval(() => {
      if (socket !== this.socket) return;
      if (this.pending.length > 0 && Date.now() - this.progressAt > this.replyTimeoutMs) {
        this.fail(socket, new RedisError(`no reply from redis ${this.host}:${this.port} within ${this.replyTimeoutMs} ms; connection closed`));
      }
    }, Math.max(10, this.replyTimeoutMs / 2));
    this.watchdog.unref();
  }

  private onData(socket: Socket, d: Buffer): void {
    if (socket !== this.socket) return;
    this.progressAt = Date.now();
    if (this.size + d.length > MAX_REPLY_BYTES) return this.fail(socket, new RedisError(`redis ${this.host}:${this.port} sent a reply larger than 64 MiB; connection closed`));
    let buf: Buffer;
    if (this.size === 0) buf = d; // the usual case: whole replies in one chunk, parsed where they arrived
    else {
      if (this.size + d.length > this.unparsed.length) {
        const grown = Buffer.allocUnsafe(Math.min(MAX_REPLY_BYTES, Math.max(2 * this.unparsed.length, this.size + d.length)));
        this.unparsed.copy(grown, 0, 0, this.size);
        this.unparsed = grown;
      }
      d.copy(this.unparsed, this.size);
      this.size += d.length;
      if (this.size < this.need) return;
      buf = this.unparsed.subarray(0, this.size);
    }
    const walk = this.walk;
    let at = 0;
    try {
      while (at < buf.length) {
        const end = complete(buf, walk);
        if (end === -1) break;
        const r = parse(buf, at);
        if (!r) break;
        at = end;
        const p = this.pending.shift();
        if (r.value instanceof RedisError) p?.reject(r.value);
        else p?.resolve(r.value);
      }
    } catch (err) {
      return this.fail(socket, err as Error);
    }
    const left = buf.length - at;
    this.need = left > 0 && walk.needed > 0 ? walk.needed - at : 0;
    if (left === 0) {
      this.size = 0;
      walk.reset();
      if (this.unparsed.length > 1024 * 1024) this.unparsed = EMPTY; // a large reply's buffer is not kept
      return;
    }
    if (buf === d) {
      // The start of a reply in a fresh chunk: kept in the growing buffer.
      if (this.unparsed.length < left) this.unparsed = Buffer.allocUnsafe(Math.max(left, 64 * 1024));
      d.copy(this.unparsed, 0, at);
    } else if (at > 0) this.unparsed.copy(this.unparsed, 0, at, this.size);
    walk.shift(at);
    this.size = left;
  }

  private reset(): void {
    this.unparsed = EMPTY;
    this.size = 0;
    this.need = 0;
    this.walk.reset();
  }

  /** The peer broke the protocol: every waiting command fails with `err`, the next one reconnects. */
  private fail(socket: Socket, err: Error): void {
    this.reset();
    this.socket = undefined;
    for (const p of this.pending.splice(0)) p.reject(err);
    socket.destroy();
  }

  private onClose(socket: Socket): void {
    // A connection given up on before (`fail`) closes later: its commands failed then, and those waiting now are the
    // next connection's.
    if (this.socket !== socket) return;
    this.socket = undefined;
    clearInterval(this.watchdog);
    const err = new Error('redis connection closed');
    for (const p of this.pending.splice(0)) p.reject(err);
  }

  /** Write what is held (if its socket is still the one) with `more` after it, in one write. */
  private writeHeld(more: string): void {
    const socket = this.heldOn;
    const out = this.held + more;
    this.held = '';
    this.heldOn = undefined;
    if (out !== '' && socket !== undefined && !socket.destroyed) socket.write(out, 'utf8');
  }

  /** `hold`: written at the end of this turn when other commands await replies (then in one write with them). */
  private send(socket: Socket, args: readonly (string | number)[], hold = false): Promise<RespValue> {
    return new Promise((resolve, reject) => {
      // The first command waiting starts the clock; with others waiting it runs from the last reply.
      if (this.pending.length === 0) this.progressAt = Date.now();
      this.pending.push({ resolve, reject });
      if (this.heldOn !== undefined && this.heldOn !== socket) {
        // Held for a connection since closed: its commands have failed already.
        this.held = '';
        this.heldOn = undefined;
      }
      if (!hold || this.pending.length === 1) {
        if (this.heldOn === undefined) socket.write(encode(args), 'utf8');
        else this.writeHeld(encode(args));
        return;
      }
      this.held += encode(args);
      this.heldOn = socket;
      if (!this.flushing) {
        this.flushing = true;
        setImmediate(this.flushHeld);
      }
    });
  }

  /** Send a command now (with any queued before it, in one write). */
  async command(...args: (string | number)[]): Promise<RespValue> {
    if (this.closed) throw new Error('redis client closed');
    return this.send(await this.open(), args);
  }

  /**
   * Send a command now if no other awaits a reply; otherwise at the end of this event-loop turn, in one write with
   * the others queued meanwhile (the key lookups of many requests at once). Replies keep the commands' order.
   */
  async queue(...args: (string | number)[]): Promise<RespValue> {
    if (this.closed) throw new Error('redis client closed');
    return this.send(await this.open(), args, true);
  }

  close(): void {
    this.closed = true;
    clearInterval(this.watchdog);
    this.socket?.destroy();
  }
}
