import type { IncomingHttpHeaders } from 'node:http';
import { Readable } from 'node:stream';
import type { Dispatcher } from 'undici';
import { BodyTooLargeError } from '../sdk/index.ts';
import type { AbortHook, AbortReceiver } from '../exchange/abort-hook.ts';

/** An upstream answer read whole: `body` is the bytes, or (rarely) a stream that fails as the body did. */
export interface WholeResponse {
  readonly statusCode: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer | Readable;
  /** `performance.now()` when the answer's headers arrived: the attempt's span and duration end there, as with `request()`. */
  readonly answeredAt: number;
}

/**
 * An undici dispatch handler (undici 7's controller API) that collects the upstream's status, headers and body
 * chunks and settles one promise when the answer ended (ADR 0058): no `BodyReadable`, no `RequestHandler`, no
 * second promise to read the body, which `request()` plus a capped read cost per answer. It rejects as `request()`
 * does when the request fails before the answer starts; once the answer started, a failure (the body over `limit`:
 * `BodyTooLargeError`; the upstream breaking off; an abort) resolves with a stream that fails with that error, so
 * the caller sees it where it read the body before.
 */
export class WholeAnswer implements Dispatcher.DispatchHandler, AbortReceiver {
  readonly promise: Promise<WholeResponse>;
  private resolve!: (response: WholeResponse) => void;
  private reject!: (err: unknown) => void;
  private readonly limit: number;
  /** The exchange's abort (no per-attempt timer): told through `receive`, no listener closure. */
  private readonly hook: AbortHook | undefined;
  /** The exchange's state when `hook` is its abort: why it was aborted (the hook has no `aborted` property). */
  private readonly state: { readonly aborted?: unknown } | null;
  /** Called once when the answer's headers arrived (the per-attempt timer stops there, as with `request()`). */
  private readonly onStarted: (() => void) | undefined;
  private controller: Dispatcher.DispatchController | null = null;
  private statusCode = 0;
  private headers: IncomingHttpHeaders | null = null;
  private answeredAt = 0;
  private first: Buffer | undefined = undefined;
  private rest: Buffer[] | undefined = undefined;
  private size = 0;
  private tooLarge = false;
  private settled = false;

  constructor(limit: number, state: { readonly aborted?: unknown; abortHook(): AbortHook } | null, onStarted?: () => void) {
    this.limit = limit;
    this.state = state;
    const hook = state?.abortHook();
    this.hook = hook;
    this.onStarted = onStarted;
    this.promise = new Promise<WholeResponse>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
    hook?.receive(this);
  }

  /** The exchange was aborted (AbortHook): the client left or the request timed out. */
  upstreamAborted(): void {
    this.abort(this.state?.aborted);
  }

  /** Abort the call (an AbortSignal's listener calls this when there is a per-attempt timer). */
  abort(reason: unknown): void {
    const err = reason instanceof Error ? reason : new Error(String(reason));
    if (this.controller !== null) this.controller.abort(err);
    else this.onResponseError(undefined, err);
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    if (this.settled) return controller.abort(new Error('aborted'));
    const aborted = this.state?.aborted;
    // Aborted while queued for a connection: give up now.
    if (aborted !== undefined) controller.abort(aborted instanceof Error ? aborted : new Error(String(aborted)));
    else this.controller = controller;
  }

  onResponseStart(_controller: Dispatcher.DispatchController, statusCode: number, headers: IncomingHttpHeaders): void {
    if (statusCode < 200) return; // 1xx informational answers are not relayed (as with `request()`)
    this.statusCode = statusCode;
    this.headers = headers;
    this.answeredAt = performance.now();
    this.onStarted?.();
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.tooLarge) return;
    this.size += chunk.length;
    if (this.size > this.limit) {
      this.tooLarge = true;
      this.first = this.rest = undefined;
      controller.abort(new BodyTooLargeError(this.limit));
      return;
    }
    if (this.first === undefined) this.first = chunk;
    else (this.rest ??= []).push(chunk);
  }

  onResponseEnd(): void {
    if (this.settled) return;
    this.done();
    const rest = this.rest;
    const body = rest === undefined ? (this.first ?? EMPTY) : Buffer.concat([this.first!, ...rest], this.size);
    this.resolve({ statusCode: this.statusCode, headers: this.headers!, body, answeredAt: this.answeredAt });
  }

  onResponseError(_controller: Dispatcher.DispatchController | undefined, err: Error): void {
    if (this.settled) return;
    this.done();
    if (this.headers === null) return this.reject(err);
    // The answer had started: the body fails where it is read, as a streamed body would have.
    const failure = this.tooLarge ? new BodyTooLargeError(this.limit) : err;
    // Fails when first read, so whoever reads it has its listeners on by then.
    const failed = new Readable({
      read() {
        this.destroy(failure);
      },
    });
    this.resolve({ statusCode: this.statusCode, headers: this.headers, body: failed, answeredAt: this.answeredAt });
  }

  private done(): void {
    this.settled = true;
    this.controller = null;
    this.hook?.receive(undefined);
  }
}

const EMPTY = Buffer.alloc(0);
