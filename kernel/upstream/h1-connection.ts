// One keep-alive connection of the lean upstream client (ADR 0073) and the request it carries: the head and body
// written, the answer parsed by h1-parser.ts and handed to the handler undici's core API shape uses (`onConnect`,
// `onHeaders`, `onData`, `onComplete`, `onError`), so DirectForward serves either client.
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import { H1ResponseParser } from './h1-parser.ts';
import type { ResponseSink } from './h1-parser.ts';
import { declaredLength, emptyBodyFraming, requestBytes, requestHead } from './h1-request-head.ts';
import { UPLOAD_STALLED } from './upstream-errors.ts';

export interface H1Handler {
  onConnect(abort: (err?: Error) => void): void;
  /** Raw `[name, value, ...]` as latin1 strings. False: paused until `resume`. */
  onHeaders(status: number, raw: string[], resume: () => void): boolean;
  onData(chunk: Buffer): boolean;
  onComplete(trailers: string[] | null): void;
  /** A Content-Length body's last bytes, which end the answer (`onData` and `onComplete` in one). */
  onEnd(last: Buffer): void;
  onError(err: Error): void;
}

export interface H1Dispatch {
  path: string;
  method: string;
  headers: IncomingHttpHeaders;
  body: Buffer | IncomingMessage | null;
  /** ms until the answer's head must have arrived, from when the request body was sent whole; 0: none. */
  headersTimeout: number;
  /** ms the answer's body, or a request body streamed from the client, may stay silent; 0: none. */
  bodyTimeout: number;
}

/** A transport failure; `code` as undici's errors read, so `upstreamFailure` maps both clients alike. */
export class H1Error extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.code = code;
  }
}

/** What a connection needs of its pool. */
export interface H1Owner {
  /** The connection finished an answer and may be reused (or is closed: `reusable` false). */
  released(conn: H1Connection, reusable: boolean): void;
  /** The connection closed. */
  gone(conn: H1Connection): void;
  /** Send `call` again on a fresh connection (its reused one failed before any answer byte). */
  retry(call: H1Call): void;
}

const IDEMPOTENT = new Set(['GET', 'HEAD', 'OPTIONS', 'TRACE', 'PUT', 'DELETE']);
/** A request body up to this size goes out in one write with its head (copied: cheap below this). */
const ONE_WRITE_MAX = 16 * 1024;
/** Deadlines at least this long are checked by the pool's sweep (500 ms ticks, as undici's own fast timers). */
export const SWEPT_MS = 1000;

/** One request from dispatch to its end; may move to a second connection once (see `H1Owner.retry`). */
export class H1Call implements ResponseSink {
  readonly opts: H1Dispatch;
  readonly handler: H1Handler;
  conn: H1Connection | null = null;
  retried = false;
  settled = false;
  readonly abort = (err?: Error): void => this.fail(err ?? new H1Error('UND_ERR_ABORTED', 'Request aborted'));
  readonly resume = (): void => this.conn?.resume();

  constructor(opts: H1Dispatch, handler: H1Handler) {
    this.opts = opts;
    this.handler = handler;
  }

  /** Safe to send again: nothing of it can have been acted on twice (an idempotent method, a body held in memory). */
  get replayable(): boolean {
    return !this.retried && (this.opts.body === null || Buffer.isBuffer(this.opts.body)) && IDEMPOTENT.has(this.opts.method);
  }

  head(status: number, raw: string[]): void {
    const conn = this.conn!;
    conn.answered();
    if (!this.handler.onHeaders(status, raw, this.resume)) conn.pause();
  }

  data(chunk: Buffer): void {
    if (!this.handler.onData(chunk)) this.conn?.pause();
  }

  end(trailers: string[] | null): void {
    if (this.settleAnswered()) this.handler.onComplete(trailers);
  }

  last(chunk: Buffer): void {
    if (this.settleAnswered()) this.handler.onEnd(chunk);
  }

  /** The answer is complete: the connection goes back to its pool. False when the call had already settled. */
  private settleAnswered(): boolean {
    if (this.settled) return false;
    this.settled = true;
    const conn = this.conn!;
    this.conn = null;
    conn.finished();
    return true;
  }

  fail(err: Error): void {
    if (this.settled) return;
    this.settled = true;
    const conn = this.conn;
    this.conn = null;
    conn?.drop(err);
    this.handler.onError(err);
  }
}

export class H1Connection {
  readonly socket: Socket;
  private readonly owner: H1Owner;
  private readonly parser = new H1ResponseParser();
  call: H1Call | null = null;
  /** Answers served: a connection that served one is "reused" for the next. */
  served = 0;
  /** performance.now() past which the current wait fails (the pool's sweep checks it); 0: none. */
  deadline = 0;
  /** The deadline's error code. */
  deadlineCode = '';
  /** performance.now() past which an idle connection is closed. */
  idleUntil = 0;
  /** The request body is still being written. */
  private writing = false;
  /** A streamed request body is being written and no answer has started: the deadline is the upload's idle one. */
  private uploading = false;
  private paused = false;
  /** For deadlines shorter than SWEPT_MS only. */
  private timer: NodeJS.Timeout | null = null;

  /** The upstream's `Keep-Alive: timeout=` of its last answer, ms, or 0. */
  get hintMs(): number {
    return this.parser.keepAliveHintMs;
  }

  constructor(owner: H1Owner, socket: Socket) {
    this.owner = owner;
    this.socket = socket;
    socket.on('data', (chunk: Buffer) => this.read(chunk));
    socket.on('end', () => this.closed(null));
    socket.on('error', (err) => this.closed(err));
    socket.on('close', () => this.closed(null));
  }

  /** Write `call`'s request (head and body) and expect its answer. */
  send(call: H1Call): void {
    const opts = call.opts;
    const body = opts.body;
    // Head and body in one Buffer, one write (a corked pair would go out by `writev`: a write wrap, a chunk array
    // and the cork's bookkeeping per request); a streamed or large body follows its head.
    let bytes: Buffer | null = null;
    let head = '';
    try {
      if (body === null) bytes = requestBytes(opts.method, opts.path, opts.headers, emptyBodyFraming(opts.method), null);
      else if (Buffer.isBuffer(body) && body.length <= ONE_WRITE_MAX) bytes = requestBytes(opts.method, opts.path, opts.headers, `content-length: ${body.length}\r\n\r\n`, body);
      else head = requestHead(opts.method, opts.path, opts.headers);
    } catch (err) {
      this.owner.released(this, !this.socket.destroyed && this.socket.writable);
      return call.fail(err as Error);
    }
    this.call = call;
    call.conn = this;
    this.paused = false;
    this.parser.expect(call, opts.method === 'HEAD');
    const socket = this.socket;
    // The answer's deadline starts once the request is sent whole (Envoy's route timeout starts once the request
    // was received): a body streamed from the client first has the idle deadline, renewed by each chunk (ADR 0117).
    if (bytes === null && !Buffer.isBuffer(body)) {
      this.uploading = true;
      this.rearm(opts.bodyTimeout, UPLOAD_STALLED);
    } else this.rearm(opts.headersTimeout, 'UND_ERR_HEADERS_TIMEOUT');
    if (bytes !== null) socket.write(bytes);
    else if (Buffer.isBuffer(body)) {
      socket.cork();
      socket.write(`${head}content-length: ${body.length}\r\n\r\n`, 'latin1');
      socket.write(body);
      socket.uncork();
    } else this.stream(body!, head, declaredLength(opts.headers));
  }

  /** A streamed request body: with its declared length, else chunked; paused while the socket is full. */
  private stream(body: IncomingMessage, head: string, length: number): void {
    const socket = this.socket;
    const chunked = length === -1;
    this.writing = true;
    socket.write(chunked ? `${head}transfer-encoding: chunked\r\n\r\n` : `${head}content-length: ${length}\r\n\r\n`, 'latin1');
    let sent = 0;
    const call = this.call!;
    const onData = (c: Buffer): void => {
      if (call.conn !== this) return cleanup(); // the call ended (answered early, failed, aborted)
      sent += c.length;
      if (this.uploading) this.arm(call.opts.bodyTimeout, UPLOAD_STALLED);
      if (!chunked && sent > length) return call.fail(new H1Error('UND_ERR_REQ_CONTENT_LENGTH_MISMATCH', 'Request body length does not match content-length header'));
      // A chunk's three writes all go out (a full buffer takes them too), corked into one: the last says whether to pause.
      let ok: boolean;
      if (chunked) {
        socket.cork();
        socket.write(`${c.length.toString(16)}\r\n`, 'latin1');
        socket.write(c);
        ok = socket.write('\r\n', 'latin1');
        socket.uncork();
      } else ok = socket.write(c);
      if (!ok) {
        body.pause();
        socket.once('drain', () => {
          if (this.uploading && call.conn === this) this.arm(call.opts.bodyTimeout, UPLOAD_STALLED);
          body.resume();
        });
      }
    };
    const onEnd = (): void => {
      cleanup();
      if (call.conn !== this) return;
      if (!chunked && sent !== length) return call.fail(new H1Error('UND_ERR_REQ_CONTENT_LENGTH_MISMATCH', 'Request body length does not match content-length header'));
      if (chunked) socket.write('0\r\n\r\n', 'latin1');
      this.writing = false;
      if (this.uploading) {
        this.uploading = false;
        this.rearm(call.opts.headersTimeout, 'UND_ERR_HEADERS_TIMEOUT');
      }
    };
    const onClose = (): void => {
      cleanup();
      if (this.writing && call.conn === this) call.fail(new H1Error('UND_ERR_ABORTED', 'Request aborted'));
    };
    const onError = (err: Error): void => {
      cleanup();
      call.fail(err);
    };
    const cleanup = (): void => {
      body.off('data', onData).off('end', onEnd).off('close', onClose).off('error', onError);
    };
    body.on('data', onData).on('end', onEnd).on('close', onClose).on('error', onError);
    if (body.isPaused()) body.resume();
  }

  /** Set (or clear, `ms` 0) the current wait's deadline; a short one renews its timer (same `ms` as it was made with). */
  private arm(ms: number, code: string): void {
    if (ms <= 0) {
      this.clearDeadline();
      return;
    }
    this.deadlineCode = code;
    if (ms >= SWEPT_MS) {
      this.deadline = performance.now() + ms;
      return;
    }
    this.deadline = 0;
    if (this.timer === null) this.timer = setTimeout(() => this.expired(), ms);
    else this.timer.refresh();
  }

  /** A deadline of another wait (its own length): the short timer is made again. */
  private rearm(ms: number, code: string): void {
    this.clearDeadline();
    this.arm(ms, code);
  }

  /** The current wait ran out (the sweep or a short timer). */
  expired(): void {
    const call = this.call;
    if (call === null || this.paused) return;
    this.deadline = 0;
    let code = this.deadlineCode;
    // An upload stalled because the upstream stopped reading it is the upstream's silence, not the client's.
    if (code === UPLOAD_STALLED && this.socket.writableNeedDrain) code = 'UND_ERR_BODY_TIMEOUT';
    const message = code === 'UND_ERR_HEADERS_TIMEOUT' ? 'Headers Timeout Error' : code === UPLOAD_STALLED ? 'Request body stalled' : 'Body Timeout Error';
    call.fail(new H1Error(code, message));
  }

  answered(): void {
    this.uploading = false;
    this.rearm(this.call!.opts.bodyTimeout, 'UND_ERR_BODY_TIMEOUT');
  }

  pause(): void {
    this.paused = true;
    this.socket.pause();
  }

  resume(): void {
    if (!this.paused) return;
    this.paused = false;
    if (this.call !== null) this.arm(this.call.opts.bodyTimeout, 'UND_ERR_BODY_TIMEOUT');
    this.socket.resume();
  }

  /** The answer ended: back to the pool, unless the upstream or an unfinished request body rules that out. */
  finished(): void {
    this.call = null;
    this.uploading = false;
    this.clearDeadline();
    this.served++;
    if (this.paused) this.resume();
    // Answered before its request body was all sent (an early 413, say): the rest cannot be told from a next request.
    if (this.writing) {
      this.writing = false;
      this.socket.destroy();
    } else this.owner.released(this, this.parser.keepAlive);
  }

  /** The call gave up on this connection (abort, deadline, malformed answer): it is closed. */
  drop(err: Error): void {
    this.call = null;
    this.uploading = false;
    this.clearDeadline();
    this.parser.detach();
    this.socket.destroy();
    void err;
  }

  private clearDeadline(): void {
    this.deadline = 0;
    if (this.timer !== null) {
      clearTimeout(this.timer);
      this.timer = null;
    }
  }

  private read(chunk: Buffer): void {
    const call = this.call;
    if (call === null) {
      // Bytes nobody asked for (on an idle connection, or after an answer ended): it cannot be reused.
      this.socket.destroy();
      return;
    }
    if (this.deadline !== 0 && this.deadlineCode === 'UND_ERR_BODY_TIMEOUT') this.deadline = performance.now() + call.opts.bodyTimeout;
    else if (this.timer !== null && this.deadlineCode === 'UND_ERR_BODY_TIMEOUT') this.timer.refresh();
    try {
      if (!this.parser.execute(chunk)) this.socket.destroy();
    } catch (err) {
      call.fail(err as Error);
    }
  }

  private closed(err: Error | null): void {
    this.owner.gone(this);
    const call = this.call;
    if (call === null) return;
    if (err === null && this.parser.closed()) return;
    // The reused connection was closed under the request before any answer byte: the upstream had dropped it.
    if (this.served > 0 && !this.parser.started && call.replayable) {
      this.call = null;
      this.uploading = false;
      this.clearDeadline();
      this.parser.detach();
      call.retried = true;
      call.conn = null;
      return this.owner.retry(call);
    }
    call.fail(err ?? new H1Error('UND_ERR_SOCKET', 'other side closed'));
  }
}
