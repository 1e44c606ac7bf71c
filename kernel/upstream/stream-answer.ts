import { Readable } from 'node:stream';
import type { Dispatcher } from 'undici';
import type { AbortHook, AbortReceiver } from '../exchange/abort-hook.ts';
import type { WholeResponse } from './whole-answer.ts';

/**
 * An undici dispatch handler for a streamed answer that keeps the upstream's raw header list (`ForwardOptions.
 * rawHeaders`, docs/perf.md "The ai row's streams, session 9"): it settles one promise when the headers arrive, with
 * the body as a {@link StreamBody} the chunks are pushed into. `request()` made a `RequestHandler`, its
 * `BodyReadable` and the header object (`parseHeaders`) per answer, and the reply writer flattened that object
 * again. Rejects as `request()` does when the request fails before the answer starts; after that a failure (the
 * upstream breaking off, the body deadline, an abort) destroys the body with the error, as `request()`'s body did.
 */
export class StreamAnswer implements Dispatcher.DispatchHandler, AbortReceiver {
  readonly promise: Promise<WholeResponse>;
  private resolve!: (response: WholeResponse) => void;
  private reject!: (err: unknown) => void;
  /** The exchange's abort (no per-attempt timer): told through `upstreamAborted`, no listener closure. */
  private readonly hook: AbortHook | undefined;
  /** The exchange's state when `hook` is its abort: why it was aborted. */
  private readonly state: { readonly aborted?: unknown } | null;
  /** Called once when the answer's headers arrived (the per-attempt timer stops there, as with `request()`). */
  private readonly onStarted: (() => void) | undefined;
  /** undici's abort of this request, from `onConnect`; null once it ended. */
  abortRequest: ((err?: Error) => void) | null = null;
  /** undici's resume, from `onHeaders`: called when the body is read again after `push` said stop. */
  resume: (() => void) | null = null;
  private body: StreamBody | null = null;
  private ended = false;

  constructor(state: { readonly aborted?: unknown; abortHook(): AbortHook } | null, onStarted?: () => void) {
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

  /** Abort the call (the per-attempt timer, the exchange's signal, the body destroyed by its reader). */
  abort(reason: unknown): void {
    const err = reason instanceof Error ? reason : new Error(String(reason));
    if (this.abortRequest !== null) this.abortRequest(err);
    else this.onError(err);
  }

  onConnect(abort: (err?: Error) => void): void {
    if (this.ended) return abort(new Error('aborted'));
    const aborted = this.state?.aborted;
    // Aborted while queued for a connection: give up now.
    if (aborted !== undefined) abort(aborted instanceof Error ? aborted : new Error(String(aborted)));
    else this.abortRequest = abort;
  }

  onHeaders(statusCode: number, rawHeaders: Buffer[], resume: () => void): boolean {
    if (statusCode < 200) return true; // 1xx informational answers are not relayed (as with `request()`)
    this.resume = resume;
    const body = new StreamBody(this);
    this.body = body;
    this.onStarted?.();
    this.resolve({ statusCode, rawHeaders, body, answeredAt: performance.now() });
    return true;
  }

  onData(chunk: Buffer): boolean {
    // False: undici pauses the socket until the body is read again (`_read` calls `resume`).
    return this.body!.push(chunk);
  }

  onComplete(): void {
    if (this.ended) return;
    this.done();
    this.body!.push(null);
  }

  onError(err: Error): void {
    if (this.ended) return;
    this.done();
    if (this.body === null) this.reject(err);
    else this.body.destroy(err);
  }

  private done(): void {
    this.ended = true;
    this.abortRequest = null;
    this.hook?.receive(undefined);
  }
}

/** The body of a {@link StreamAnswer}: read by whoever takes the reply; destroyed early, it aborts the request. */
class StreamBody extends Readable {
  private readonly answer: StreamAnswer;

  constructor(answer: StreamAnswer) {
    super();
    this.answer = answer;
  }

  override _read(): void {
    this.answer.resume?.();
  }

  override _destroy(err: Error | null, callback: (error?: Error | null) => void): void {
    // Destroyed before the answer ended (the client left, a reader gave up): the upstream request goes too.
    const abort = this.answer.abortRequest;
    if (abort !== null) abort(err ?? new Error('aborted'));
    callback(err);
  }
}
