import type { AbortHook, AbortReceiver } from '../exchange/abort-hook.ts';
import { connectErrorCode } from './upstream-errors.ts';

/** Failures of requests undici never handed to a connection (it could not connect, a TLS handshake failed). */
const unsent = new WeakSet<object>();

/**
 * Whether `err` failed a request before any of it was written (ADR 0156): a failure to connect, or one before undici
 * handed the request to a connection (`onConnect`). The lean client is handed requests before it connects: only its
 * connect failures count.
 */
export function failedUnsent(err: unknown): boolean {
  return connectErrorCode(err) !== undefined || (typeof err === 'object' && err !== null && unsent.has(err));
}

/**
 * What the kernel's undici dispatch handlers for `forward` (an answer read whole, ADR 0058; a streamed one with its
 * raw headers, ADR 0081) share: one promise for the answer, the exchange's abort told through `upstreamAborted` (no
 * listener closure) or a per-attempt abort, and undici's abort of the request from `onConnect` until it ended.
 */
export abstract class AnswerHandler<T> implements AbortReceiver {
  readonly promise: Promise<T>;
  protected resolve!: (answer: T) => void;
  protected reject!: (err: unknown) => void;
  /** The exchange's abort (no per-attempt timer). */
  private readonly hook: AbortHook | undefined;
  /** The exchange's state when `hook` is its abort: why it was aborted (the hook has no `aborted` property). */
  private readonly state: { readonly aborted?: unknown } | null;
  /** Called once when the answer's headers arrived (the per-attempt timer stops there, as with `request()`). */
  protected readonly onStarted: (() => void) | undefined;
  /** undici's abort of this request, from `onConnect`; null once it ended. */
  abortRequest: ((err?: Error) => void) | null = null;
  /** The request is over (completed, failed or aborted). */
  protected ended = false;
  /** `onConnect` was called: the request was handed to a connection, and may have been written. */
  private handedOn = false;

  constructor(state: { readonly aborted?: unknown; abortHook(): AbortHook } | null, onStarted?: () => void) {
    this.state = state;
    const hook = state?.abortHook();
    this.hook = hook;
    this.onStarted = onStarted;
    this.promise = new Promise<T>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
    hook?.receive(this);
  }

  abstract onError(err: Error): void;

  /** The exchange was aborted (AbortHook): the client left or the request timed out. */
  upstreamAborted(): void {
    this.abort(this.state?.aborted);
  }

  /** Abort the call (an AbortSignal's listener calls this when there is a per-attempt timer). */
  abort(reason: unknown): void {
    const err = reason instanceof Error ? reason : new Error(String(reason));
    if (this.abortRequest !== null) this.abortRequest(err);
    else this.onError(err);
  }

  onConnect(abort: (err?: Error) => void): void {
    this.handedOn = true;
    if (this.ended) return abort(new Error('aborted'));
    const aborted = this.state?.aborted;
    // Aborted while queued for a connection: give up now.
    if (aborted !== undefined) abort(aborted instanceof Error ? aborted : new Error(String(aborted)));
    else this.abortRequest = abort;
  }

  /** `err`, the request's failure before its answer, noted when nothing of the request was written (`failedUnsent`). */
  protected beforeAnswer(err: Error): Error {
    if (!this.handedOn) unsent.add(err);
    return err;
  }

  /** The request ended: no abort to pass on any more. */
  protected done(): void {
    this.ended = true;
    this.abortRequest = null;
    this.hook?.receive(undefined);
  }
}
