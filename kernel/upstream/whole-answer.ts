import { Readable } from 'node:stream';
import type { Dispatcher } from 'undici';
import { BodyTooLargeError, RawHeadersReply } from '../sdk/index.ts';
import type { HeaderMap } from '../sdk/index.ts';
import { headerNameToString, parseHeaders } from './undici-core.ts';
import type { AbortHook, AbortReceiver } from '../exchange/abort-hook.ts';

/** An upstream answer read whole: `body` is the bytes, or (rarely) a stream that fails as the body did. */
export interface WholeResponse {
  readonly statusCode: number;
  /** undici's raw `[name, value, …]` list: made an object only if something reads the reply's `headers`. */
  readonly rawHeaders: readonly Buffer[];
  readonly body: Buffer | Readable;
  /** `performance.now()` when the answer's headers arrived: the attempt's span and duration end there, as with `request()`. */
  readonly answeredAt: number;
}

/**
 * An undici dispatch handler that collects the upstream's status, raw headers and body chunks and settles one promise
 * when the answer ended (ADR 0058): no `BodyReadable`, no `RequestHandler`, no second promise to read the body, which
 * `request()` plus a capped read cost per answer. It speaks the handler API undici's core calls (`onConnect`,
 * `onHeaders`, …) as `DirectForward` does: the controller API would have undici wrap it per request and make the
 * header object (`parseHeaders`) that the reply writer would flatten again. It rejects as `request()`
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
  /** undici's abort of this request, from `onConnect`; null once settled. */
  private abortRequest: ((err?: Error) => void) | null = null;
  private statusCode = 0;
  private rawHeaders: readonly Buffer[] | null = null;
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
    if (this.abortRequest !== null) this.abortRequest(err);
    else this.onError(err);
  }

  onConnect(abort: (err?: Error) => void): void {
    if (this.settled) return abort(new Error('aborted'));
    const aborted = this.state?.aborted;
    // Aborted while queued for a connection: give up now.
    if (aborted !== undefined) abort(aborted instanceof Error ? aborted : new Error(String(aborted)));
    else this.abortRequest = abort;
  }

  onHeaders(statusCode: number, rawHeaders: Buffer[]): boolean {
    if (statusCode < 200) return true; // 1xx informational answers are not relayed (as with `request()`)
    this.statusCode = statusCode;
    this.rawHeaders = rawHeaders;
    this.answeredAt = performance.now();
    this.onStarted?.();
    return true;
  }

  onData(chunk: Buffer): boolean {
    if (this.tooLarge) return true;
    this.size += chunk.length;
    if (this.size > this.limit) {
      this.tooLarge = true;
      this.first = this.rest = undefined;
      this.abortRequest?.(new BodyTooLargeError(this.limit));
      return true;
    }
    if (this.first === undefined) this.first = chunk;
    else (this.rest ??= []).push(chunk);
    return true;
  }

  onComplete(): void {
    if (this.settled) return;
    this.done();
    const rest = this.rest;
    const body = rest === undefined ? (this.first ?? EMPTY) : Buffer.concat([this.first!, ...rest], this.size);
    this.resolve({ statusCode: this.statusCode, rawHeaders: this.rawHeaders!, body, answeredAt: this.answeredAt });
  }

  onError(err: Error): void {
    if (this.settled) return;
    this.done();
    if (this.rawHeaders === null) return this.reject(err);
    // The answer had started: the body fails where it is read, as a streamed body would have.
    const failure = this.tooLarge ? new BodyTooLargeError(this.limit) : err;
    // Fails when first read, so whoever reads it has its listeners on by then.
    const failed = new Readable({
      read() {
        this.destroy(failure);
      },
    });
    this.resolve({ statusCode: this.statusCode, rawHeaders: this.rawHeaders, body: failed, answeredAt: this.answeredAt });
  }

  private done(): void {
    this.settled = true;
    this.abortRequest = null;
    this.hook?.receive(undefined);
  }
}

const EMPTY = Buffer.alloc(0);

/** An answer read whole as a `Reply`: its header object made from undici's raw list only when read. */
export class WholeReply extends RawHeadersReply {
  protected nameOf(name: Buffer | string): string {
    return headerNameToString(name);
  }

  protected parse(raw: readonly (Buffer | string)[]): HeaderMap {
    return parseHeaders(raw);
  }
}
