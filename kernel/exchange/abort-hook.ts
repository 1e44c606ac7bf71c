/**
 * An EventEmitter-style abort signal, the kind undici accepts besides AbortSignal (`on`/`once('abort')`,
 * `removeListener`, no `aborted` property): forwarding needs no AbortController per request. One upstream call
 * at a time listens.
 */
export class AbortHook {
  private listener: (() => void) | undefined = undefined;
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
    this.listener = undefined;
    listener?.();
  }
}
