import type { Server as HttpServer, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { parseRequestHead } from './request-head.ts';
import { LeanRequest } from './lean-request.ts';
import { ProxyResponse } from './proxy-response.ts';
import { LeanAnswer } from './lean-answer.ts';
import type { AnswerOwner } from './lean-answer.ts';
import { announceKeepAlive, LEAN } from './idle-sweep.ts';
import type { SweptSocket } from './idle-sweep.ts';
import { RETRY_BUFFER_LIMIT } from '../exchange/upstream-plan.ts';

// The lean HTTP/1.1 server side (ADR 0088): a cleartext connection's requests are parsed here (request-head.ts) and,
// when their route is served lean, answered through a `LeanAnswer` (ADR 0093: the direct forward's answer written
// to the socket as node:http would write it; anything else through node:http's own `ServerResponse`, made before the
// first byte) without llhttp's callbacks, `IncomingMessage` and its stream states. Anything else is handed to
// node:http before a byte is answered: the bytes read so far are put back (`unshift`) and node's own connection
// listener takes the socket, for good.

/** Serves one request the lean way, or declines having done nothing (the connection is then node:http's). */
export interface LeanServing {
  /** Whether `req`'s route is served lean; no state changes when false. */
  acceptsLean(req: LeanRequest, port: number): boolean;
  /**
   * Serve it (after `acceptsLean`): `res` is a `LeanAnswer` standing in for node:http's response (ADR 0093), which
   * makes that response when an answer needs it; `body` is the whole request body, if any.
   */
  serveLean(req: LeanRequest, res: ServerResponse, body: Buffer | undefined, port: number): void;
}

/** What the lean side needs of its bind server. */
export interface LeanBind {
  readonly server: HttpServer;
  readonly port: number;
  /** node:http's connection listener, taken off the server: a handed-off connection is given to it. */
  readonly nodeConnection: (this: HttpServer, socket: Socket) => void;
  readonly serving: LeanServing;
  /** No complete request head this long after connecting: 408, as node:http's `headersTimeout` (0: none). */
  readonly headerTimeoutMs: number;
  /** The lean connections open on this bind (closed when idle by `closeIdle`). */
  readonly open: Set<LeanConnection>;
}

/** The error node:http reports for its headers deadline (answered by the bind's 'clientError' handler). */
function headersTimeout(): NodeJS.ErrnoException {
  return Object.assign(new Error('Request timeout'), { code: 'ERR_HTTP_REQUEST_TIMEOUT' });
}

/** node:http's `emitCloseNT`: a finished response closes on the next tick. */
function emitClose(res: ServerResponse & { _closed?: boolean }): void {
  if (res._closed) return;
  res.destroyed = true;
  res._closed = true;
  res.emit('close');
}

type LeanSocket = SweptSocket & { _handle?: { _consumed?: boolean } | null; destroySoon?: () => void };
type Response = ServerResponse & { _last: boolean; detachSocket(socket: Socket): void; assignSocket(socket: Socket): void };

const kConnection = Symbol('switchyard.leanConnection');

/** node:http's mark of a response whose write returned false (its 'drain' is due). */
const kNeedDrain: symbol | undefined = Object.getOwnPropertySymbols(new (process.getBuiltinModule('node:http').OutgoingMessage)()).find((s) => s.description === 'kNeedDrain');

/** A written lean answer closes on the next tick, as node:http's response does. */
function closeAnswer(answer: LeanAnswer): void {
  answer.close();
}

/** Shared 'finish' listener of lean responses (no closure per request). */
function onFinish(this: Response & { [kConnection]?: LeanConnection }): void {
  this[kConnection]!.finished(this);
}

/** One cleartext connection while it is the lean side's. */
export class LeanConnection implements AnswerOwner {
  private readonly socket: LeanSocket;
  private readonly bind: LeanBind;
  /** Bytes read and not yet consumed (a pipelined request behind the one being answered). */
  private pending: Buffer | null = null;
  /** The response or lean answer being written, if any. */
  private current: Response | LeanAnswer | null = null;
  /** Reading was paused because a request is pipelined behind the one being answered. */
  private paused = false;
  /** Waiting for the first request head under the headers deadline. */
  private timed = false;
  private readonly onData = (chunk: Buffer): void => this.data(chunk);
  private readonly onEnd = (): void => this.ended();
  private readonly onError = (err: Error): void => this.failed(err);
  private readonly onTimeout = (): void => this.failed(headersTimeout());
  private readonly onDrain = (): void => this.drained();
  private readonly onClose = (): void => {
    this.bind.open.delete(this);
    this.closedUnder();
  };
  /** The last write of a lean answer went out (or failed: then the socket's 'close' ends the answer). */
  readonly onAnswerWritten = (err?: Error | null): void => {
    const answer = this.current;
    if (err || !(answer instanceof LeanAnswer)) return;
    answer.written();
    this.socket._httpMessage = null;
    process.nextTick(closeAnswer, answer);
    this.proceed(answer.last);
  };

  constructor(socket: Socket, bind: LeanBind) {
    this.socket = socket as LeanSocket;
    this.bind = bind;
    this.socket[LEAN] = true;
    // node:http's server fields of its sockets, which its own code (and ours, bind-servers.ts) reads.
    (socket as Socket & { server?: HttpServer }).server = bind.server;
    socket.on('data', this.onData);
    socket.on('end', this.onEnd);
    socket.on('error', this.onError);
    socket.once('close', this.onClose);
    socket.on('drain', this.onDrain);
    if (bind.headerTimeoutMs > 0) {
      this.timed = true;
      socket.setTimeout(bind.headerTimeoutMs, this.onTimeout);
    }
    bind.open.add(this);
  }

  /** Idle between requests (drain, a bind closing): closed as node:http closes its idle connections. */
  closeIfIdle(): void {
    if (this.current === null) this.socket.destroy();
  }

  private data(chunk: Buffer): void {
    this.pending = this.pending === null ? chunk : Buffer.concat([this.pending, chunk]);
    if (this.current !== null) {
      // A request pipelined behind the one being answered: read no more until that answer is written.
      this.paused = true;
      this.socket.pause();
      return;
    }
    this.next();
  }

  /** Serve the request at the front of `pending`, or hand the connection off. */
  private next(): void {
    const buf = this.pending!;
    const head = parseRequestHead(buf, 0, buf.length);
    if (head === null || head.bodyLength > RETRY_BUFFER_LIMIT || head.end + head.bodyLength > buf.length) return this.handOff();
    const socket = this.socket;
    const req = new LeanRequest(head, socket);
    const bind = this.bind;
    if (!bind.serving.acceptsLean(req, bind.port)) return this.handOff();
    if (this.timed) {
      this.timed = false;
      socket.setTimeout(0);
      socket.off('timeout', this.onTimeout);
    }
    const bodyEnd = head.end + head.bodyLength;
    const body = head.bodyLength > 0 ? buf.subarray(head.end, bodyEnd) : undefined;
    this.pending = bodyEnd < buf.length ? buf.subarray(bodyEnd) : null;
    const answer = new LeanAnswer(this, req, socket, !head.close);
    this.current = answer;
    // What node:http's `assignSocket` sets: the idle sweep and the 'clientError' handler see an answer in flight.
    socket._httpMessage = answer as unknown as ServerResponse;
    bind.serving.serveLean(req, answer as unknown as ServerResponse, body, bind.port);
  }

  /** node:http's response to a lean request, made and set up as its `parserOnIncoming` does. */
  private response(req: LeanRequest, keepAlive: boolean): Response {
    const res = new (ProxyResponse as unknown as new (req: unknown, options: object) => ProxyResponse)(req, { highWaterMark: this.socket.writableHighWaterMark, rejectNonStandardBodyWrites: false }) as unknown as Response & { [kConnection]?: LeanConnection };
    res.shouldKeepAlive = keepAlive;
    announceKeepAlive(res);
    res[kConnection] = this;
    this.current = res;
    res.assignSocket(this.socket);
    res.on('finish', onFinish);
    return res;
  }

  /** A lean answer that needs node:http (AnswerOwner): its response takes the socket, before any byte was written. */
  nodeResponse(answer: LeanAnswer): ServerResponse {
    this.socket._httpMessage = null;
    return this.response(answer.req, answer.shouldKeepAlive);
  }

  /** node:http's `resOnFinish` for a lean response: the next request, or the connection's end. */
  finished(res: Response): void {
    res.detachSocket(this.socket);
    process.nextTick(emitClose, res);
    this.proceed(res._last);
  }

  /** The connection closed under a lean answer: it closes (node:http's `onServerResponseClose`). */
  private closedUnder(): void {
    const answer = this.current;
    if (!(answer instanceof LeanAnswer)) return;
    this.current = null;
    this.socket._httpMessage = null;
    answer.close();
  }

  /** An answer is complete: the next request, or the connection's end (`last`). */
  private proceed(last: boolean): void {
    this.current = null;
    if (last) {
      this.pending = null;
      this.socket.destroySoon!();
      return;
    }
    if (this.pending !== null) this.next();
    if (this.paused && this.current === null && !this.socket.destroyed && this.socket.listenerCount('data') > 0) {
      this.paused = false;
      this.socket.resume();
    }
  }

  /**
   * node:http's `socketOnDrain`: a response whose write returned false hears 'drain' when the socket's buffer has
   * gone out (the direct forward then resumes the upstream's answer). Without it an answer larger than the buffer
   * stopped for good after its first full write.
   */
  private drained(): void {
    const current = this.current;
    if (current instanceof LeanAnswer) {
      if (!current.needDrain) return;
      current.needDrain = false;
      current.emit('drain');
      return;
    }
    const res = current as (Response & Record<symbol, boolean>) | null;
    if (res === null || kNeedDrain === undefined || !res[kNeedDrain]) return;
    res[kNeedDrain] = false;
    res.emit('drain');
  }

  /**
   * The connection becomes node:http's, before anything was answered on it: what was read goes back in front of the
   * socket's stream and node's connection listener takes it as a new connection.
   */
  private handOff(): void {
    const socket = this.socket;
    this.detach();
    const bytes = this.pending;
    this.pending = null;
    socket.pause();
    this.paused = false;
    // node:http would read the socket in C++ (`parser.consume`), around the bytes put back: it reads 'data' events
    // instead, which come in order (those bytes first).
    if (socket._handle) socket._handle._consumed = true;
    if (bytes !== null) socket.unshift(bytes);
    this.bind.nodeConnection.call(this.bind.server, socket);
    socket.resume();
  }

  /** Take the lean side's listeners off (hand-off, or a failure answered by the bind's 'clientError' handler). */
  private detach(): void {
    const socket = this.socket;
    socket.off('data', this.onData);
    socket.off('end', this.onEnd);
    socket.off('error', this.onError);
    socket.off('close', this.onClose);
    socket.off('drain', this.onDrain);
    if (this.timed) {
      this.timed = false;
      socket.setTimeout(0);
      socket.off('timeout', this.onTimeout);
    }
    socket[LEAN] = undefined;
    this.bind.open.delete(this);
  }

  /** The client closed its side: as node:http without `httpAllowHalfOpen`, close ours (an answer in flight is cut). */
  private ended(): void {
    this.socket.end();
  }

  /** A socket error or the headers deadline: node:http's 'clientError' path (bind-servers.ts answers or closes). */
  private failed(err: Error): void {
    const socket = this.socket;
    this.detach();
    this.pending = null;
    // A lean answer in flight still closes with the connection.
    if (this.current instanceof LeanAnswer) socket.once('close', this.onClose);
    socket.on('error', () => undefined);
    if (!this.bind.server.emit('clientError', err, socket)) socket.destroy();
  }
}
