// The lean upstream client's pool for one cleartext HTTP/1.1 origin (ADR 0073): keep-alive `net.Socket`s, no bound on
// their number (as the undici Pool it stands beside), idle ones reused newest first and closed after 30 s or the
// upstream's `Keep-Alive: timeout=` less 2 s (undici's `keepAliveTimeoutThreshold`). Deadlines of 1 s or more are
// checked by one 500 ms sweep per pool, running only while the pool has connections: no timer per request.
import { connect } from 'node:net';
import { H1Call, H1Connection, H1Error } from './h1-connection.ts';
import type { H1Dispatch, H1Handler, H1Owner } from './h1-connection.ts';

const KEEP_ALIVE_MS = 30_000;
const KEEP_ALIVE_THRESHOLD_MS = 2_000;
const CONNECT_TIMEOUT_MS = 10_000;
const SWEEP_MS = 500;

export class H1Pool implements H1Owner {
  private readonly host: string;
  private readonly port: number;
  private readonly idle: H1Connection[] = [];
  private readonly all = new Set<H1Connection>();
  private sweep: NodeJS.Timeout | null = null;
  private closing = false;
  private whenEmpty: (() => void) | null = null;
  /** Connections gone while idle and not last in `idle`: dropped by the next sweep, not searched for one by one. */
  private idleStale = false;

  constructor(host: string, port: number) {
    this.host = host;
    this.port = port;
  }

  /** Send a request; `handler` sees it as undici's core handler API would. */
  dispatch(opts: H1Dispatch, handler: H1Handler): void {
    const call = new H1Call(opts, handler);
    handler.onConnect(call.abort);
    if (call.settled) return;
    if (this.closing) return call.fail(new H1Error('UND_ERR_DESTROYED', 'The client is destroyed'));
    this.connection(false).send(call);
  }

  retry(call: H1Call): void {
    if (this.closing) return call.fail(new H1Error('UND_ERR_SOCKET', 'other side closed'));
    this.connection(true).send(call);
  }

  /** An idle connection (newest first) or a new one. */
  private connection(fresh: boolean): H1Connection {
    if (!fresh) {
      for (let conn = this.idle.pop(); conn !== undefined; conn = this.idle.pop()) {
        const s = conn.socket;
        if (!s.destroyed && s.writable && !s.readableEnded) return conn;
      }
    }
    const socket = connect({ host: this.host, port: this.port, noDelay: true, keepAlive: true, keepAliveInitialDelay: 60_000 });
    socket.setTimeout(CONNECT_TIMEOUT_MS, () => socket.destroy(new H1Error('UND_ERR_CONNECT_TIMEOUT', 'Connect Timeout Error')));
    socket.once('connect', () => socket.setTimeout(0));
    const conn = new H1Connection(this, socket);
    this.all.add(conn);
    this.sweep ??= setInterval(() => this.check(), SWEEP_MS).unref();
    return conn;
  }

  released(conn: H1Connection, reusable: boolean): void {
    if (!reusable || this.closing || conn.socket.destroyed) return void conn.socket.destroy();
    const hint = conn.hintMs;
    const ms = hint > 0 ? Math.min(KEEP_ALIVE_MS, hint - KEEP_ALIVE_THRESHOLD_MS) : KEEP_ALIVE_MS;
    if (ms <= 0) return void conn.socket.destroy();
    conn.idleUntil = performance.now() + ms;
    this.idle.push(conn);
  }

  gone(conn: H1Connection): void {
    if (!this.all.delete(conn)) return;
    // A sweep closing thousands of idle connections would search the list once for each (quadratic).
    if (this.idle[this.idle.length - 1] === conn) this.idle.pop();
    else if (this.idle.length > 0) this.idleStale = true;
    if (this.all.size === 0) {
      this.idle.length = 0;
      this.idleStale = false;
      if (this.sweep !== null) clearInterval(this.sweep);
      this.sweep = null;
      this.whenEmpty?.();
    }
  }

  /** Deadlines and idle connections, twice a second. */
  private check(): void {
    const now = performance.now();
    if (this.idleStale) this.dropGoneIdle();
    for (const conn of this.all) {
      if (conn.call !== null) {
        if (conn.deadline !== 0 && now > conn.deadline) conn.expired();
      } else if (now > conn.idleUntil && conn.idleUntil !== 0) conn.socket.destroy();
    }
  }

  /** Keep in `idle` only the connections still open, in order (the newest still last). */
  private dropGoneIdle(): void {
    this.idleStale = false;
    let kept = 0;
    for (const conn of this.idle) if (this.all.has(conn)) this.idle[kept++] = conn;
    this.idle.length = kept;
  }

  /** Let in-flight requests finish; close idle connections now. Resolves when none is left. */
  close(): Promise<void> {
    this.closing = true;
    for (const conn of this.idle.splice(0)) conn.socket.destroy();
    if (this.all.size === 0) return Promise.resolve();
    return new Promise((resolve) => (this.whenEmpty = resolve));
  }

  /** Close every connection; in-flight requests fail. */
  destroy(): Promise<void> {
    this.closing = true;
    for (const conn of [...this.all]) conn.socket.destroy();
    return Promise.resolve();
  }
}
