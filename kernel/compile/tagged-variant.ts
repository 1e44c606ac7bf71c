import { GatewayError } from '../sdk/index.ts';
import { markFailure, ownAs } from './plugin-owner.ts';
import type { PluginOwner } from './plugin-owner.ts';

/**
 * A third-party variant instance (an LLM provider, a guard, a transport) as the plugin that compiled it hands it on
 * (ADR 0154): each of its methods, when it throws or its promise rejects, marks the error with the variant's plugin,
 * so the request's 500 is logged naming it, as a hook's is (ADR 0144). The error passes on unchanged (the caller may
 * test its class); a GatewayError is an answer the variant chose and is not marked. The proxy reads the instance
 * itself (getters and private fields keep working) and leaves every other property as it is.
 */
export function taggedVariant<T>(instance: T, owner: PluginOwner, slot: string): T {
  if (typeof instance !== 'object' || instance === null) return instance;
  const stage = `\`${slot}\` variant`;
  const mark = (err: unknown): never => {
    if (!(err instanceof GatewayError)) markFailure(err, owner, stage);
    throw err;
  };
  const wrapped = new Map<PropertyKey, unknown>();
  const proxy = new Proxy(instance as object, {
    get(target, prop) {
      const value: unknown = Reflect.get(target, prop, target);
      if (typeof value !== 'function' || prop === 'constructor') return value;
      let fn = wrapped.get(prop);
      if (fn === undefined || (fn as { original?: unknown }).original !== value) {
        const method = value as (...args: unknown[]) => unknown;
        const call = (...args: unknown[]): unknown => {
          let result: unknown;
          try {
            result = method.apply(target, args);
          } catch (err) {
            return mark(err);
          }
          // A promise-like of another library too (ADR 0155): adopted, so that its rejection is marked as well.
          return typeof (result as PromiseLike<unknown> | null | undefined)?.then === 'function' ? Promise.resolve(result).then(undefined, mark) : result;
        };
        fn = Object.assign(call, { original: value });
        wrapped.set(prop, fn);
      }
      return fn;
    },
  });
  ownAs(proxy, owner);
  return proxy as T;
}
