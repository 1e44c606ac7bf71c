/** Whether `value` is a promise or any thenable (a plugin's hook may return either). */
export function isPromiseLike<T>(value: unknown): value is PromiseLike<T> {
  return typeof (value as { then?: unknown } | null | undefined)?.then === 'function';
}

/**
 * `pending`, or a rejection with what `timedOut()` makes once `ms` pass first (ADR 0144): how the kernel bounds
 * plugin code that might never settle (a request hook, a compile, a prompt guard's check), and how a plugin bounds
 * code of others it calls. The timer is cleared when `pending` settles; `pending` itself is not cancelled.
 */
export function settleWithin<T>(pending: PromiseLike<T>, ms: number, timedOut: () => unknown): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(timedOut()), ms);
    pending.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (err: unknown) => {
        clearTimeout(timer);
        reject(err);
      },
    );
  });
}

/** Whether `work` settled by `deadline` (ms since the epoch); it is not waited for after. */
export async function settledBy(work: Promise<unknown>, deadline: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), Math.max(0, deadline - Date.now()));
  });
  const done = (): true => true;
  const settled = await Promise.race([work.then(done, done), late]);
  clearTimeout(timer);
  return settled;
}
