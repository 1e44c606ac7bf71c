import { jsonReply, localReply } from 'switchyard/sdk';
import type { HeaderMap, Reply } from 'switchyard/sdk';
import type { RpcId, RpcMessage } from './jsonrpc.ts';
import { SseStream } from './sse-stream.ts';

/** One client request being served: where its answer and related messages go, and what it sent upstream. */
export class Call {
  readonly id: RpcId;
  readonly method: string;
  readonly responder: Responder;
  /** Upstream requests made for it (target connection and upstream id), for cancellation. */
  readonly refs: { readonly conn: { abandon(id: number, reason: string): void; readonly name: string }; readonly id: number }[] = [];
  progressToken: unknown = undefined;
  done = false;

  constructor(id: RpcId, method: string, responder: Responder) {
    this.id = id;
    this.method = method;
    this.responder = responder;
  }

  targets(name: string): boolean {
    for (const r of this.refs) if (r.conn.name === name) return true;
    return false;
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
}

/**
 * The response to one streamable-HTTP POST: an SSE stream (when the client accepts it) carrying related messages
 * and the answers, closed after the last one; or one JSON body (an array for a batch) once all calls are answered.
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

  constructor(sse: boolean, requests: number, batch: boolean, headers: HeaderMap, unrelated: (message: RpcMessage) => void) {
    this.streaming = sse;
    this.total = requests;
    this.remaining = requests;
    this.batch = batch;
    this.headers = headers;
    this.unrelated = unrelated;
    this.reply = new Promise<Reply>((resolve) => {
      this.resolve = resolve;
    });
  }

  /** Calls still waiting for an answer. */
  get open(): number {
    return this.remaining;
  }

  private settle(reply: Reply): void {
    if (this.settled) return;
    this.settled = true;
    this.resolve(reply);
  }

  private ensureStream(): SseStream {
    if (!this.stream) {
      this.stream = new SseStream();
      this.settle(this.stream.reply({ ...this.headers }));
    }
    return this.stream;
  }

  commit(): void {
    if (this.streaming && !this.stream) this.ensureStream().flushHeaders();
  }

  related(message: RpcMessage): void {
    if (this.streaming) this.ensureStream().send(message);
    else this.unrelated(message);
  }

  final(message: RpcMessage, httpStatus?: number): void {
    this.remaining--;
    if (this.streaming) {
      if (!this.stream && httpStatus !== undefined && this.total === 1) {
        this.settle(jsonReply(httpStatus, message, { ...this.headers }));
        return;
      }
      const stream = this.ensureStream();
      stream.send(message);
      if (this.remaining === 0) stream.end();
      return;
    }
    this.results.push(message);
    if (this.remaining === 0) this.finishJson(httpStatus);
  }

  abandon(): void {
    this.remaining--;
    if (this.remaining > 0) return;
    if (this.streaming) {
      if (this.stream) this.stream.end();
      else this.settle(localReply(202, null, { ...this.headers }));
    } else this.finishJson(undefined);
  }

  private finishJson(httpStatus: number | undefined): void {
    if (this.results.length === 0) this.settle(localReply(202, null, { ...this.headers }));
    else if (this.batch) this.settle(jsonReply(200, this.results, { ...this.headers }));
    else this.settle(jsonReply(this.total === 1 && httpStatus !== undefined ? httpStatus : 200, this.results[0], { ...this.headers }));
  }
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
