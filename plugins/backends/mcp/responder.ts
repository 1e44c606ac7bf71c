import type { PluginSpan } from 'switchyard/sdk';
import { jsonReply, localReply } from 'switchyard/sdk';
import type { HeaderMap, Reply } from 'switchyard/sdk';
import type { RpcId, RpcMessage } from './jsonrpc.ts';
import type { FlowGate } from '../../lib/mcp/upstream-contract.ts';
import type { LoggedStream } from './event-log.ts';
import { SseStream } from './sse-stream.ts';

/**
 * One client request being served: where its answer and related messages go, and what it sent upstream. Its pace is
 * its responder's: the upstream stream answering it waits while its client has not taken what was relayed (ADR 0182).
 */
export class Call implements FlowGate {
  readonly id: RpcId;
  readonly method: string;
  /** Where the answer goes; replaced when a 2026-07-28 call waits for input and its retry arrives. */
  responder: Responder;
  /** Upstream requests made for it (target connection and upstream id), for cancellation. */
  readonly refs: { readonly conn: { abandon(id: number, reason: string): void; readonly name: string }; readonly id: number }[] = [];
  progressToken: unknown = undefined;
  done = false;
  /** The call's span when tracing (ended with the answer). */
  span: PluginSpan | undefined = undefined;
  /** The client request's id (ADR 0025), sent to HTTP targets as `x-request-id` with the call's upstream requests. */
  requestId: string | undefined = undefined;

  constructor(id: RpcId, method: string, responder: Responder) {
    this.id = id;
    this.method = method;
    this.responder = responder;
  }

  targets(name: string): boolean {
    for (const r of this.refs) if (r.conn.name === name) return true;
    return false;
  }

  get backlogged(): boolean {
    return this.responder.backlogged === true;
  }

  whenDrained(callback: () => void): void {
    if (this.responder.whenDrained) this.responder.whenDrained(callback);
    else callback();
  }
}

/** Where the answers to one HTTP request's calls go. */
export interface Responder {
  /** True when messages related to the calls can be sent along (an SSE response or the legacy stream). */
  readonly streaming: boolean;
  /** A notification or server-to-client request related to one of the calls. */
  related(message: RpcMessage): void;
  /** The final answer of one call. `httpStatus` applies when nothing was sent yet (a gateway-made error). */
  final(message: RpcMessage, httpStatus?: number): void;
  /** A call was cancelled: it gets no answer. */
  abandon(): void;
  /** The call went upstream: start the response now so a long call does not hold the client's headers back. */
  commit(): void;
  /** Set a response header if the response has not started (false when too late, or not an HTTP response). */
  setHeader?(name: string, value: string): boolean;
  /** Do not start the response before the next final answer (related messages wait): that answer may set headers. */
  hold?(): void;
  /** What was sent waits for the client (a response of its own: a POST's SSE stream); see FlowGate. */
  readonly backlogged?: boolean;
  whenDrained?(callback: () => void): void;
}

/** A POST response stream that can be resumed (a stateful session's event log; see event-log.ts). */
export interface ResumableOptions {
  /** A new logical stream of the session's event log. */
  open(): LoggedStream;
  /** Start with a priming event (clients of 2025-11-25 and later accept its empty data). */
  readonly prime: boolean;
}

/**
 * The response to one streamable-HTTP POST: an SSE stream (when the client accepts it) carrying related messages
 * and the answers, closed after the last one; or one JSON body (an array for a batch) once all calls are answered.
 * With `resumable`, the SSE events carry ids and are kept in the session's event log: a client whose connection
 * drops resumes the stream with `GET` + `Last-Event-ID`.
 */
export class PostResponder implements Responder {
  readonly streaming: boolean;
  readonly reply: Promise<Reply>;
  readonly calls: Call[] = [];
  private resolve!: (reply: Reply) => void;
  private readonly headers: HeaderMap;
  private readonly total: number;
  private readonly batch: boolean;
  private readonly unrelated: (message: RpcMessage) => void;
  private remaining: number;
  private stream: SseStream | undefined;
  private readonly results: RpcMessage[] = [];
  private settled = false;
  private readonly resumableOptions: ResumableOptions | undefined;
  private logged: LoggedStream | undefined;
  private gone: (() => void) | undefined;
  private holding = false;
  private held: RpcMessage[] = [];
  private commitTimer: NodeJS.Timeout | undefined;

  constructor(sse: boolean, requests: number, batch: boolean, headers: HeaderMap, unrelated: (message: RpcMessage) => void, resumable?: ResumableOptions) {
    this.streaming = sse;
    this.total = requests;
    this.remaining = requests;
    this.batch = batch;
    this.headers = headers;
    this.unrelated = unrelated;
    this.resumableOptions = sse ? resumable : undefined;
    this.reply = new Promise<Reply>((resolve) => {
      this.resolve = resolve;
    });
  }

  /** The client holds an event id of this response and may resume it: a disconnect does not cancel at once. */
  get resumable(): boolean {
    return this.logged?.resumable === true;
  }

  /** Called when the client went away and did not resume in time (resumable responses). */
  set onGone(callback: () => void) {
    this.gone = callback;
    if (this.logged) this.logged.onGone = callback;
  }

  /** Set a header of the response, if it has not started yet. */
  setHeader(name: string, value: string): boolean {
    if (this.settled) return false;
    this.headers[name] = value;
    return true;
  }

  hold(): void {
    if (this.streaming && !this.stream) this.holding = true;
  }

  /** End a hold: the messages it kept go out first. */
  private release(): void {
    if (!this.holding) return;
    this.holding = false;
    const held = this.held;
    this.held = [];
    for (const m of held) this.write(m);
  }

  /** Calls still waiting for an answer. */
  get open(): number {
    return this.remaining;
  }

  get backlogged(): boolean {
    return this.stream?.backlogged === true;
  }

  whenDrained(callback: () => void): void {
    if (this.stream) this.stream.whenDrained(callback);
    else callback();
  }

  private settle(reply: Reply): void {
    if (this.settled) return;
    this.settled = true;
    this.resolve(reply);
  }

  /** The response stream, started now. `capture`: kept until the caller settles the reply (see `final`). */
  private ensureStream(capture = false): SseStream {
    if (!this.stream) {
      if (this.commitTimer) clearTimeout(this.commitTimer);
      this.commitTimer = undefined;
      this.stream = new SseStream();
      if (capture) this.stream.capture();
      if (this.resumableOptions) {
        this.logged = this.resumableOptions.open();
        if (this.gone) this.logged.onGone = this.gone;
        this.logged.attach(this.stream);
        if (this.resumableOptions.prime) this.logged.prime();
      }
      if (!capture) this.settle(this.stream.reply({ ...this.headers }));
    }
    return this.stream;
  }

  private write(message: RpcMessage): void {
    const stream = this.ensureStream();
    if (this.logged) this.logged.send(message);
    else stream.send(message);
  }

  private endStream(): void {
    if (this.logged) this.logged.end();
    else this.stream?.end();
  }

  /**
   * The stream starts POST_COMMIT_DELAY_MS after the request went upstream (or at its first related message), so a
   * long call does not hold the client's headers back; an answer that comes sooner goes out whole (see `final`).
   */
  commit(): void {
    if (this.streaming && !this.stream && !this.holding && !this.commitTimer && !this.settled) {
      this.commitTimer = setTimeout(startCommitted, POST_COMMIT_DELAY_MS, this);
    }
  }

  /** The commit delay passed with the answer still to come: start the stream now. */
  startNow(): void {
    this.commitTimer = undefined;
    if (this.streaming && !this.stream && !this.holding && !this.settled) {
      this.ensureStream();
      if (!this.logged || !this.resumableOptions?.prime) this.stream!.flushHeaders();
    }
  }

  related(message: RpcMessage): void {
    if (this.holding) this.held.push(message);
    else if (this.streaming) this.write(message);
    else this.unrelated(message);
  }

  final(message: RpcMessage, httpStatus?: number): void {
    this.remaining--;
    this.release();
    if (this.streaming) {
      if (!this.stream && httpStatus !== undefined && this.total === 1) {
        this.clearCommit();
        this.settle(jsonReply(httpStatus, message, { ...this.headers }));
        return;
      }
      if (!this.stream && this.remaining === 0) {
        // Every answer is in before the stream started: the same events (priming, ids, event log), in one body.
        const stream = this.ensureStream(true);
        this.write(message);
        this.endStream();
        this.settle(stream.reply({ ...this.headers }));
        return;
      }
      this.write(message);
      if (this.remaining === 0) this.endStream();
      return;
    }
    this.results.push(message);
    if (this.remaining === 0) this.finishJson(httpStatus);
  }

  private clearCommit(): void {
    if (this.commitTimer) clearTimeout(this.commitTimer);
    this.commitTimer = undefined;
  }

  abandon(): void {
    this.remaining--;
    this.release();
    if (this.remaining > 0) return;
    this.clearCommit();
    if (this.streaming) {
      if (this.stream) this.endStream();
      else this.settle(localReply(202, null, { ...this.headers }));
    } else this.finishJson(undefined);
  }

  private finishJson(httpStatus: number | undefined): void {
    if (this.results.length === 0) this.settle(localReply(202, null, { ...this.headers }));
    else if (this.batch) this.settle(jsonReply(200, this.results, { ...this.headers }));
    else this.settle(jsonReply(this.total === 1 && httpStatus !== undefined ? httpStatus : 200, this.results[0], { ...this.headers }));
  }
}

/** How long a POST's SSE response waits for its answer before it starts (see PostResponder.commit). */
export const POST_COMMIT_DELAY_MS = 250;

function startCommitted(responder: PostResponder): void {
  responder.startNow();
}

/** The legacy SSE transport: every answer and related message goes to the session's one stream. */
export class StreamResponder implements Responder {
  readonly streaming = true;
  private readonly stream: () => SseStream | undefined;

  constructor(stream: () => SseStream | undefined) {
    this.stream = stream;
  }

  related(message: RpcMessage): void {
    this.stream()?.send(message);
  }

  final(message: RpcMessage): void {
    this.stream()?.send(message);
  }

  abandon(): void {}

  commit(): void {}
}

/** Where a call's messages go while it waits for a 2026-07-28 client's retry: nowhere. */
export const DETACHED: Responder = {
  streaming: false,
  related() {},
  final() {},
  abandon() {},
  commit() {},
};
