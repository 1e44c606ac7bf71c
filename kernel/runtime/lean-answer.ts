import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { checkedHeadLines } from './proxy-response.ts';
import { KEEP_ALIVE_MS } from './idle-sweep.ts';
import type { LeanRequest } from './lean-request.ts';

// The lean answer side (ADR 0093): the direct forward's answer to a request the lean server side read (ADR 0088),
// written straight to the socket: the status line and checked head (ADR 0082's `checkedHeadLines`) and what node:http's
// `_storeHeader` adds for an HTTP/1.1 request (Date, Connection/Keep-Alive, chunked framing), then the body as
// `OutgoingMessage.write`/`end` frame it. No `ServerResponse`: its ~40 fields, its stream state, `assignSocket`'s
// listeners and `'finish'` machinery were most of what the lean request side still allocated per request (docs/perf.md
// "Session 12, leanans").
//
// It stands in for the response wherever the pipeline and the direct forward hold one (`write`, `end`, `destroy`,
// 'drain', 'close', `destroyed`, `writableFinished`, `shouldKeepAlive`). Its head is the upstream's checked list, or
// that list as response hooks and queued headers left it when every entry passes node:http's checks
// (`isCheckedHeaderList`, ADR 0095). Anything else (a `Reply`: an error, an early answer of a policy, a backend's own
// `handle`; a head it cannot write as node would: a header node:http refuses or would write as given, a `Connection`
// naming headers, an `Expect`) takes node:http's `ServerResponse`, made by `nodeResponse()` before the first byte,
// which then writes everything of this answer (this object relays its 'drain' and 'close').

/** What the lean connection gives an answer. */
export interface AnswerOwner {
  /** The callback of an answer's last write: the answer is complete (next request, or the connection's end). */
  readonly onAnswerWritten: (err?: Error | null) => void;
  /** node:http's response for this request, made and given the socket as the lean side made them before (ADR 0088). */
  nodeResponse(answer: LeanAnswer): ServerResponse;
}

/** What node:http adds to a kept-alive answer (the bind's `Keep-Alive: timeout`, idle-sweep.ts). */
const KEEP_ALIVE_LINES = `Connection: keep-alive\r\nKeep-Alive: timeout=${Math.floor(KEEP_ALIVE_MS / 1000)}\r\n`;
const CLOSE_LINE = 'Connection: close\r\n';
const LAST_CHUNK = '0\r\n\r\n';

/** node:http's `utcDate`: the Date value, made once a second. */
let dateCache: string | undefined;
function resetDate(): void {
  dateCache = undefined;
}
function utcDate(): string {
  if (dateCache === undefined) {
    const now = new Date();
    dateCache = now.toUTCString();
    setTimeout(resetDate, 1000 - now.getMilliseconds()).unref();
  }
  return dateCache;
}

export class LeanAnswer extends EventEmitter {
  readonly req: LeanRequest;
  readonly socket: Socket;
  private readonly owner: AnswerOwner;
  /** Whether the connection stays open after this answer (the client's `Connection`, a drain). */
  shouldKeepAlive: boolean;
  /** The connection closes once this answer is written (node:http's `_last`). */
  last = false;
  statusCode = 200;
  /** The head, made and not yet written (it goes out with the first body bytes, as node:http sends it). */
  head: string | null = null;
  /** Whether a head was made (node:http's `headersSent`). */
  private started = false;
  private hasBody: boolean;
  private chunked = false;
  private ended = false;
  private finishedWriting = false;
  private gone = false;
  private closeEmitted = false;
  /** A write returned false: 'drain' is due. */
  needDrain = false;
  /** node:http's response, once this answer took that path (`nodeResponse`). */
  private real: ServerResponse | null = null;

  constructor(owner: AnswerOwner, req: LeanRequest, socket: Socket, keepAlive: boolean) {
    super();
    this.owner = owner;
    this.req = req;
    this.socket = socket;
    this.shouldKeepAlive = keepAlive;
    this.hasBody = req.method !== 'HEAD';
  }

  get destroyed(): boolean {
    return this.real !== null ? this.real.destroyed : this.gone;
  }
  get writableFinished(): boolean {
    return this.real !== null ? this.real.writableFinished : this.finishedWriting;
  }
  get headersSent(): boolean {
    return this.real !== null ? this.real.headersSent : this.started;
  }

  /**
   * The direct forward's head (ADR 0082's checked list from the lean client), made as node:http's `writeHead` +
   * `_storeHeader` would make it for this HTTP/1.1 request; false, having done nothing, when that needs node:http.
   */
  writeCheckedHead(status: number, raw: readonly string[]): boolean {
    if (this.started || this.real !== null) return false;
    const checked = checkedHeadLines(status, raw, true);
    // An `Expect` line makes `_storeHeader` send the head at once: rare enough to leave to it.
    if (checked === null || checked.noted !== null) return false;
    this.started = true;
    this.statusCode = status;
    let head = checked.lines;
    if (!checked.dated) head += 'Date: ' + utcDate() + '\r\n';
    if (status === 204 || status === 304 || status < 200) this.hasBody = false;
    // `_storeHeader`'s keep-alive: an HTTP/1.1 response frames its body, so only `shouldKeepAlive` decides.
    if (this.shouldKeepAlive) head += KEEP_ALIVE_LINES;
    else {
      this.last = true;
      head += CLOSE_LINE;
    }
    // Without the upstream's Content-Length a body is chunked (its Transfer-Encoding was hop-by-hop); none for HEAD,
    // 1xx, 204 and 304.
    if (checked.length === undefined && this.hasBody) {
      this.chunked = true;
      head += 'Transfer-Encoding: chunked\r\n';
    }
    this.head = head + '\r\n';
    return true;
  }

  /**
   * node:http's response for this answer, made before anything was written (`writeReply`, a head this side does not
   * write): from then on it writes everything and this object relays its 'drain' and 'close'.
   */
  nodeResponse(): ServerResponse {
    if (this.real !== null) return this.real;
    if (this.gone || this.started) return this as unknown as ServerResponse;
    const real = this.owner.nodeResponse(this);
    this.real = real;
    real.on('drain', () => this.emit('drain'));
    real.on('close', () => this.close());
    return real;
  }

  /** `OutgoingMessage.write` of a body chunk: framed, after the head; false when the socket's buffer is full. */
  write(chunk: Buffer): boolean {
    if (this.real !== null) return this.real.write(chunk);
    if (this.ended || this.gone) return false;
    // HEAD, 204, 304: node:http drops the body.
    if (!this.hasBody) return true;
    const socket = this.socket;
    // Ended by us after the client's FIN: node:http holds the bytes, which never go out; the socket's 'close' ends this.
    if (!socket.writable) return false;
    const head = this.head;
    this.head = null;
    let ok: boolean;
    if (chunk.length === 0) ok = head === null ? true : socket.write(head, 'latin1');
    else if (this.chunked) {
      socket.cork();
      socket.write((head ?? '') + chunk.length.toString(16) + '\r\n', 'latin1');
      socket.write(chunk);
      ok = socket.write('\r\n', 'latin1');
      socket.uncork();
    } else if (head !== null) {
      socket.cork();
      socket.write(head, 'latin1');
      ok = socket.write(chunk);
      socket.uncork();
    } else ok = socket.write(chunk);
    if (!ok) this.needDrain = true;
    return ok;
  }

  /** `OutgoingMessage.end`: the last bytes (the head, if still unsent), then the connection's next request. */
  end(last?: Buffer): this {
    if (this.real !== null) {
      if (last === undefined) this.real.end();
      else this.real.end(last);
      return this;
    }
    if (this.ended || this.gone) return this;
    this.ended = true;
    const socket = this.socket;
    if (!socket.writable) return this;
    const head = this.head ?? '';
    this.head = null;
    const done = this.owner.onAnswerWritten;
    const body = this.hasBody && last !== undefined && last.length > 0 ? last : null;
    if (this.chunked) {
      if (body === null) socket.write(head + LAST_CHUNK, 'latin1', done);
      else {
        socket.cork();
        socket.write(head + body.length.toString(16) + '\r\n', 'latin1');
        socket.write(body);
        socket.write('\r\n' + LAST_CHUNK, 'latin1', done);
        socket.uncork();
      }
    } else if (body === null) {
      if (head === '') process.nextTick(done);
      else socket.write(head, 'latin1', done);
    } else if (head === '') socket.write(body, done);
    else {
      // A corked head string and body (one writev). Copying both into one Buffer per answer saved ~0.5 KiB/request
      // but held memory outside the heap: RSS under load +6-7 MiB, more promotion with 16 KiB answers
      // (docs/perf.md "Session 12, leanans").
      socket.cork();
      socket.write(head, 'latin1');
      socket.write(body, done);
      socket.uncork();
    }
    return this;
  }

  /** `OutgoingMessage.destroy`: the connection is cut (its 'close' closes this answer). */
  destroy(err?: Error): this {
    if (this.real !== null) {
      this.real.destroy(err);
      return this;
    }
    if (this.gone) return this;
    this.gone = true;
    this.socket.destroy(err);
    return this;
  }

  /** The last write went out (the connection's `onAnswerWritten`). */
  written(): void {
    this.finishedWriting = true;
  }

  /** node:http's `emitCloseNT`: once, after the answer was written or the connection closed under it. */
  close(): void {
    if (this.closeEmitted) return;
    this.closeEmitted = true;
    this.gone = true;
    this.emit('close');
  }
}
