/** An object told of the abort, instead of a listener function (no closure per request). */
export interface AbortReceiver {
  upstreamAborted(): void;
}

/**
 * An EventEmitter-style abort signal, the kind undici accepts besides AbortSignal (`on`/`once('abort')`,
 * `removeListener`, no `aborted` property): forwarding needs no AbortController per request. One upstream call
 * at a time listens, with a function (undici's `signal`) or as an `AbortReceiver` (the direct forward).
 */
export class AbortHook {
  private listener: (() => void) | undefined = undefined;
  private receiver: AbortReceiver | undefined = undefined;
  /** Let `receiver` be told of the abort; `undefined` stops it. */
  receive(receiver: AbortReceiver | undefined): void {
    this.receiver = receiver;
  }
  on(_event: 'abort', listener: () => void): void {
    this.listener = listener;
  }
  once(_event: 'abort', listener: () => void): void {
    this.listener = listener;
  }
  removeListener(_event: 'abort', listener: () => void): void {
    if (this.listener === listener) this.listener = undefined;
  }
  fire(): void {
    const listener = this.listener;
    const receiver = this.receiver;
    this.listener = undefined;
    this.receiver = undefined;
    listener?.();
    receiver?.upstreamAborted();
  }
}
