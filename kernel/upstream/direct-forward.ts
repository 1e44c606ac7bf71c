import type { Span } from '@opentelemetry/api';
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import type { Dispatcher } from 'undici';
import type { Exchange, GatewayError } from '../sdk/index.ts';
import type { AbortReceiver } from '../exchange/abort-hook.ts';
import type { BodyReceiver } from '../exchange/body-read.ts';
import type { ExchangeState } from '../exchange/kernel-exchange.ts';
import type { UpstreamPlan } from '../exchange/upstream-plan.ts';
import { ErrorCode } from '../sdk/index.ts';
import { InvalidStatusError, isHttpStatus, isRetryableFailure } from './upstream-errors.ts';
import { destroyStream } from './undici-core.ts';
import type { H1Handler } from './h1-connection.ts';
import { relayTrailers } from './trailers.ts';
import type { UpstreamTrailers } from './trailers.ts';

/** What the runtime does with an answer forwarded straight into the client's response (ADR 0051). */
export interface DirectReplies<E extends Exchange> {
  /**
   * Write the upstream's status and headers (undici's raw `[name, value, ...]` Buffers) to the client (queued headers
   * added, hop-by-hop ones left out). False when nothing may be written: a reply was already started (a timeout), the
   * client left, or a header was invalid (then a 500 went out instead).
   */
  start(ex: E, res: ServerResponse, status: number, rawHeaders: RawHeaders): boolean;
  /** Answer with the failure: the upstream failed before its answer started (`err` as the client should see it). */
  fail(ex: E, res: ServerResponse, err: unknown): void;
  /** The upstream broke off its answer after it started: the client must see a truncated response. */
  broke(ex: E, res: ServerResponse, err: Error): void;
}

/** The target's side: sending, its metrics and how a transport failure reads to the client. */
export interface DirectOrigin {
  /** Send the request through the lean client (cleartext HTTP/1.1, ADR 0073) or undici's pool, `handler` seeing either alike. */
  dispatchDirect(ex: Exchange, plan: UpstreamPlan, headers: IncomingHttpHeaders, body: Buffer | IncomingMessage | null, handler: Dispatcher.DispatchHandler & H1Handler): void;
  /** When tracing: the attempt's CLIENT span, its `traceparent` written into `headers`; undefined otherwise. */
  attemptSpan(ex: Exchange, headers: IncomingHttpHeaders): Span | undefined;
  /** The answer's headers arrived, `sentAt` (performance.now()) after the request was sent (`span` ends with `status`). */
  answered(sentAt: number, status: number, span: Span | undefined): void;
  /** An attempt failed: its metrics, and the error as the GatewayError the client sees (`span` ends with it). */
  attemptFailed(err: unknown, sentAt: number, plan: UpstreamPlan, span?: Span): GatewayError;
}

/**
 * An answer's raw `[name, value, ...]` headers: undici's Buffers, or the lean client's latin1 strings (ADR 0073).
 * `headerNameToString`, `toString('latin1')` and undici's `parseHeaders` read both alike.
 */
export type RawHeaders = readonly (Buffer | string)[];

const WAITING = 0;
const STREAMING = 1;
const DONE = 2;

/**
 * An undici dispatch handler that writes the upstream's status, headers and body chunks straight into the client's
 * `ServerResponse`: no `Readable` for the answer, no promise, no `pipe`, no `AsyncResource`, which `request()` costs
 * per request. A slow client pauses the upstream (`res.write` returning false), as `pipe` did; the exchange's abort
 * (client gone, request timeout) aborts it.
 *
 * It speaks the handler API undici's core calls (`onConnect`, `onHeaders`, `onData`, `onComplete`, `onError`; the lean
 * client of cleartext HTTP/1.1 upstreams calls the same, ADR 0073; typed
 * as deprecated in favour of the controller API). A controller-API handler is wrapped by undici in an `UnwrapHandler`
 * and an `UnwrapController` per request and gets its headers as an object made by `parseHeaders`; this one gets the
 * raw header Buffers and turns them straight into the flat list `writeHead` takes (docs/perf.md "Plain route CPU,
 * session 7").
 */
export class DirectForward<E extends Exchange> implements Dispatcher.DispatchHandler, H1Handler, AbortReceiver, BodyReceiver {
  private readonly ex: E;
  private readonly state: ExchangeState;
  private readonly res: ServerResponse;
  private readonly replies: DirectReplies<E>;
  private readonly origin: DirectOrigin;
  private readonly headers: IncomingHttpHeaders;
  /** The request body when it streams (the client's request): destroyed on failure, as undici's `request()` does. */
  private body: IncomingMessage | null = null;
  private sentAt = 0;
  /** The attempt's CLIENT span when tracing. */
  private span: Span | undefined = undefined;
  private phase = WAITING;
  /** undici's abort of this request, from `onConnect`. */
  private abort: ((err?: Error) => void) | null = null;
  /** undici's resume of a paused answer, from `onHeaders`. */
  private resume: (() => void) | null = null;
  /** Made on the first pause only. */
  private onDrain: (() => void) | undefined = undefined;

  constructor(ex: E, state: ExchangeState, res: ServerResponse, replies: DirectReplies<E>, origin: DirectOrigin, headers: IncomingHttpHeaders) {
    this.ex = ex;
    this.state = state;
    this.res = res;
    this.replies = replies;
    this.origin = origin;
    this.headers = headers;
  }

  /** Send the request with `body` (the exchange's, read whole, or the client's stream). */
  send(body: Buffer | IncomingMessage | null): void {
    const state = this.state;
    state.attempts = 1;
    this.sentAt = performance.now();
    if (body !== null && !Buffer.isBuffer(body)) this.body = body;
    this.span = this.origin.attemptSpan(this.ex, this.headers);
    if (state.aborted !== undefined) return this.onError(state.aborted as Error);
    state.abortHook().receive(this);
    this.origin.dispatchDirect(this.ex, state.plan, this.headers, body, this);
  }

  /** The request body was read whole (BodyReceiver). */
  bodyRead(body: Buffer): void {
    this.send(body);
  }

  /** The request body could not be read (too large, the client failed or left): answered like a rejected `forward`. */
  bodyFailed(err: GatewayError): void {
    this.phase = DONE;
    this.replies.fail(this.ex, this.res, err);
  }

  onConnect(abort: (err?: Error) => void): void {
    // Aborted while queued for a connection: give up now.
    if (this.state.aborted !== undefined) abort(this.state.aborted as Error);
    else this.abort = abort;
  }

  /** The exchange was aborted (AbortHook): the client left or the request timed out. */
  upstreamAborted(): void {
    this.abort?.(this.state.aborted as Error);
  }

  onHeaders(statusCode: number, rawHeaders: RawHeaders, resume: () => void): boolean {
    if (!isHttpStatus(statusCode)) {
      this.abort?.(new InvalidStatusError(statusCode));
      return false;
    }
    if (statusCode < 200) return true; // 1xx informational answers are not relayed (as with `request()`)
    this.origin.answered(this.sentAt, statusCode, this.span);
    if (this.replies.start(this.ex, this.res, statusCode, rawHeaders)) {
      this.phase = STREAMING;
      this.resume = resume;
      return true;
    }
    this.phase = DONE;
    this.abort?.(new Error('the reply could not be written'));
    return true;
  }

  onData(chunk: Buffer): boolean {
    if (this.phase !== STREAMING || this.res.write(chunk)) return true;
    this.res.once('drain', (this.onDrain ??= () => this.resume?.()));
    return false;
  }

  onComplete(trailers?: UpstreamTrailers | null): void {
    this.state.abortHook().receive(undefined);
    if (this.phase !== STREAMING) return;
    this.phase = DONE;
    // An HTTP/2 client gets the upstream's trailers (gRPC's status, ADR 0141); node:http's response has no sink.
    relayTrailers(this.res, trailers);
    this.res.end();
  }

  /** The lean client's last body bytes (ADR 0073): `res.end(chunk)` writes them and ends in one step. */
  onEnd(last: Buffer): void {
    this.state.abortHook().receive(undefined);
    if (this.phase !== STREAMING) return;
    this.phase = DONE;
    this.res.end(last);
  }

  onError(err: Error): void {
    this.state.abortHook().receive(undefined);
    if (this.body !== null) {
      this.body.on('error', () => undefined);
      destroyStream(this.body, err);
    }
    const phase = this.phase;
    this.phase = DONE;
    if (phase === DONE) return;
    // Aborted by the exchange: whoever aborted it answers (a timeout) or nobody is left to answer.
    const aborted = this.state.aborted !== undefined;
    if (phase === STREAMING) {
      if (aborted) this.res.destroy();
      else this.replies.broke(this.ex, this.res, err);
      return;
    }
    const failure = this.origin.attemptFailed(err, this.sentAt, this.state.plan, this.span);
    if (!this.state.timedOut && !this.res.destroyed) this.state.retryableFailure = isRetryableFailure(failure.code === ErrorCode.upstreamTimeout ? failure : err);
    if (!aborted) this.replies.fail(this.ex, this.res, failure);
  }
}
