import type { Exchange, PolicyInstance, Reply } from '../sdk/index.ts';

type HookResult = void | Reply | undefined | Promise<void | Reply | undefined>;

function isThenable(value: unknown): value is PromiseLike<void | Reply | undefined> {
  return typeof (value as { then?: unknown } | undefined)?.then === 'function';
}

/**
 * Walk request hooks from `start`. Sync hooks are not awaited: the chain only becomes async at the first hook
 * that returns a promise. A returned Reply stops the chain.
 */
export function runRequestHooks(hooks: readonly PolicyInstance[], ex: Exchange, start = 0): Reply | undefined | Promise<Reply | undefined> {
  for (let i = start; i < hooks.length; i++) {
    const result: HookResult = hooks[i]!.onRequest!(ex);
    if (result === undefined) continue;
    if (isThenable(result)) {
      return Promise.resolve(result).then((reply) => (reply ? reply : runRequestHooks(hooks, ex, i + 1)));
    }
    return result as Reply;
  }
  return undefined;
}
