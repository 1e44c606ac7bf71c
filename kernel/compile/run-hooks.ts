import type { Duplex } from 'node:stream';
import { ErrorCode, GatewayError, settleWithin } from '../sdk/index.ts';
import type { BackendChoice, BackendInstance, BackendSelector, Exchange, Logger, PolicyInstance, Reply, UpstreamAttempt } from '../sdk/index.ts';
import { PluginHookError, UnwritableReply, ownAs, ownerOf } from './plugin-owner.ts';
import type { PluginOwner } from './plugin-owner.ts';
import { replyProblem } from './reply-check.ts';
import { DrainedBody } from '../exchange/body-read.ts';
import { isPromiseLike } from '../sdk/settle-within.ts';

type HookResult = void | Reply | undefined | Promise<void | Reply | undefined>;

/**
 * A failure of `owner`'s code, tagged with it: a GatewayError is an answer the code chose and passes unchanged, except
 * the kernel's finding that the code read the request body from `ex.req` and kept it (ADR 0155).
 */
function tagged(owner: PluginOwner | undefined, err: unknown, stage: string): unknown {
  if (err instanceof DrainedBody) return new PluginHookError(owner, err, err.logMessage, stage);
  return err instanceof GatewayError || err instanceof PluginHookError ? err : new PluginHookError(owner, err, undefined, stage);
}

/** A hook's failure, tagged with its plugin (looked up only when it failed). */
function failure(hook: PolicyInstance, err: unknown, stage = 'request hook'): unknown {
  return tagged(ownerOf(hook), err, stage);
}

/** The 504 of plugin code that did not settle within `ms`, with the log's `message` naming it. */
function notSettled(owner: PluginOwner, ms: number, message: string, stage: string): PluginHookError {
  const answer = new GatewayError(504, 'request_timeout', `request did not complete within ${ms}ms`, ErrorCode.requestTimeout);
  return new PluginHookError(owner, answer, message, stage);
}

/**
 * What a third-party plugin returned as its reply, checked (ADR 0154): one the response writer cannot write is a
 * PluginHookError naming the plugin (a 500), not a TypeError that ends the process.
 */
function checkedReply<T>(owner: PluginOwner, reply: T, stage: string): T {
  const problem = replyProblem(reply);
  if (problem !== undefined) throw new PluginHookError(owner, new TypeError(`${stage} returned ${problem}`), undefined, stage);
  return reply;
}

/**
 * A third-party hook's promise (a thenable too) as a native one, bounded (ADR 0144): past `ms` (0: none) it rejects
 * with the 504 naming the plugin; any other rejection is tagged with it.
 */
function settled<T>(owner: PluginOwner, pending: PromiseLike<T>, ms: number, stage: string): Promise<T> {
  const bounded = ms > 0 ? settleWithin(pending, ms, () => notSettled(owner, ms, `policy \`${owner.plugin}\` did not settle its ${stage} within ${ms}ms`, stage)) : Promise.resolve(pending);
  return bounded.then(undefined, (err: unknown) => {
    throw tagged(owner, err, stage);
  });
}

/**
 * One `onUpstream` hook before an attempt: undefined when it finished at once, else its promise. Failures are tagged
 * (a third-party hook's by its wrapper, `ownedHooks`, which also bounds it).
 */
export function runUpstreamHook(hook: PolicyInstance, ex: Exchange, attempt: UpstreamAttempt): PromiseLike<void> | undefined {
  let result: void | Promise<void>;
  try {
    result = hook.onUpstream!(ex, attempt);
  } catch (err) {
    throw failure(hook, err, 'upstream hook');
  }
  if (!isPromiseLike(result)) return undefined;
  return Promise.resolve(result as PromiseLike<void>).then(undefined, (err: unknown) => {
    throw failure(hook, err, 'upstream hook');
  });
}

/**
 * A third-party route policy's backend selector as the kernel calls it (ADR 0154): its failures name the policy, and a
 * choice not made within `ms` (the route's hook deadline; 0: none) answers 504, as its request hooks do. A
 * first-party selector is returned as it is (it bounds its own waits).
 */
export function boundedSelector(policy: PolicyInstance, select: BackendSelector, ms: number): BackendSelector {
  const owner = ownerOf(policy);
  if (owner?.package === undefined) return select;
  const stage = 'backend selector';
  const checked = (choice: BackendChoice): BackendChoice => {
    if (choice === undefined) return choice;
    if (!Array.isArray(choice)) return checkedReply(owner, choice, stage);
    if (choice.every((i) => Number.isInteger(i))) return choice;
    throw new PluginHookError(owner, new TypeError(`${stage} returned ${JSON.stringify(choice).slice(0, 80)}, not a reply nor an order of backend places (indexes into the route's backends)`), undefined, stage);
  };
  return (ex) => {
    let choice: BackendChoice | Promise<BackendChoice>;
    try {
      choice = select(ex);
    } catch (err) {
      throw tagged(owner, err, stage);
    }
    if (!isPromiseLike(choice)) return checked(choice as BackendChoice);
    return settled(owner, choice as PromiseLike<BackendChoice>, ms, stage).then(checked);
  };
}

/**
 * Walk request hooks from `start`. Sync hooks are not awaited: the chain only becomes async at the first hook
 * that returns a promise. A returned Reply stops the chain. A hook's exception (other than a GatewayError) comes out
 * as a PluginHookError naming its plugin. A third-party hook is its wrapper (`ownedHooks`): bounded, its reply checked.
 */
export function runRequestHooks(hooks: readonly PolicyInstance[], ex: Exchange, start = 0): Reply | undefined | Promise<Reply | undefined> {
  for (let i = start; i < hooks.length; i++) {
    const hook = hooks[i]!;
    let result: HookResult;
    try {
      result = hook.onRequest!(ex);
    } catch (err) {
      throw failure(hook, err);
    }
    if (result === undefined) continue;
    if (isPromiseLike(result)) {
      return Promise.resolve(result).then(
        (reply) => reply || runRequestHooks(hooks, ex, i + 1),
        (err: unknown) => {
          throw failure(hook, err);
        },
      );
    }
    return result as Reply;
  }
  return undefined;
}

/**
 * A third-party backend as the kernel calls it (ADR 0144): `handle` failing with anything but a GatewayError comes out
 * as a PluginHookError naming the backend, and an answer not started within `ms` (the backend's response deadline;
 * 0: none) is a 504. The rest of the instance is the backend's own (its prototype).
 */
export function boundedBackend(instance: BackendInstance, owner: PluginOwner, ms: number): BackendInstance {
  const tag = (err: unknown): unknown => tagged(owner, err, 'backend');
  const timedOut = (): PluginHookError => notSettled(owner, ms, `backend \`${owner.plugin}\` did not answer within ${ms}ms`, 'backend');
  const bounded = Object.create(instance) as BackendInstance;
  const handle = (ex: Exchange): Reply | Promise<Reply> => {
    let reply: Reply | Promise<Reply>;
    try {
      reply = instance.handle(ex);
    } catch (err) {
      throw tag(err);
    }
    if (!isPromiseLike(reply)) return checkedReply(owner, reply, 'backend');
    const pending = ms > 0 ? settleWithin(reply as PromiseLike<Reply>, ms, timedOut) : Promise.resolve(reply);
    return pending.then(
      (answer) => checkedReply(owner, answer, 'backend'),
      (err: unknown) => {
        throw tag(err);
      },
    );
  };
  Object.defineProperty(bounded, 'handle', { value: handle, enumerable: true });
  const upgrade = instance.upgrade;
  if (upgrade !== undefined) {
    // Typed void; a JavaScript one may throw or return a promise, awaited by the upgrade path (ADR 0155).
    const tagUpgrade = (ex: Exchange, socket: Duplex, head: Buffer): void | Promise<void> => {
      let done: unknown;
      try {
        done = upgrade.call(instance, ex, socket, head);
      } catch (err) {
        throw tag(err);
      }
      if (!isPromiseLike(done)) return undefined;
      return Promise.resolve(done).then(() => undefined, (err: unknown) => {
        throw tag(err);
      });
    };
    Object.defineProperty(bounded, 'upgrade', { value: tagUpgrade, enumerable: true });
  }
  ownAs(bounded, owner);
  return bounded;
}

/** Which hook of a policy a list runs: each list of a route or backend runs one kind. */
type HookKind = 'request' | 'upstream' | 'response' | 'log';

/**
 * Each third-party instance's wrappers, by kind and deadline: made once per compile, not per request. A response or
 * log wrapper is kept with the logger it was made for: an instance that outlives a reload gets the new one.
 */
const wrappers = new WeakMap<PolicyInstance, Map<string, { arg: number | Logger; wrapper: PolicyInstance }>>();

/**
 * `hooks` as the kernel runs them (ADR 0155): a third-party policy's hook stands behind a wrapper made here, at
 * compile time, that names the plugin in its failures, bounds its promise by `ms` (request and upstream hooks; 0:
 * none), checks the reply it returns or leaves (ADR 0154) and logs an async `onLog` or `onResponseHeaders` rejection;
 * the distribution's hooks stay as they are, called directly, without a lookup. The same list when none is third-party.
 */
export function ownedHooks<L extends readonly PolicyInstance[] | null>(hooks: L, kind: 'request' | 'upstream', ms: number): L;
export function ownedHooks<L extends readonly PolicyInstance[] | null>(hooks: L, kind: 'response' | 'log', logger: Logger): L;
export function ownedHooks<L extends readonly PolicyInstance[] | null>(hooks: L, kind: HookKind, arg: number | Logger): L {
  if (hooks === null || !hooks.some((h) => ownerOf(h)?.package !== undefined)) return hooks;
  return hooks.map((hook) => {
    const owner = ownerOf(hook);
    if (owner?.package === undefined) return hook;
    const key = typeof arg === 'number' ? `${kind}:${arg}` : kind;
    let made = wrappers.get(hook);
    if (made === undefined) wrappers.set(hook, (made = new Map()));
    const cached = made.get(key);
    if (cached !== undefined && cached.arg === arg) return cached.wrapper;
    const wrapper = typeof arg === 'number' ? boundedHook(hook, owner, kind, arg) : loggedHook(hook, owner, kind, arg);
    ownAs(wrapper, owner);
    made.set(key, { arg, wrapper });
    return wrapper;
  }) as unknown as L;
}

/** A third-party `onRequest` or `onUpstream`: tagged, bounded by `ms`, a request hook's reply checked. */
function boundedHook(hook: PolicyInstance, owner: PluginOwner, kind: HookKind, ms: number): PolicyInstance {
  if (kind === 'upstream') {
    const stage = 'upstream hook';
    return {
      onUpstream: (ex, attempt) => {
        let result: void | Promise<void>;
        try {
          result = hook.onUpstream!(ex, attempt);
        } catch (err) {
          throw tagged(owner, err, stage);
        }
        return isPromiseLike(result) ? settled(owner, result as PromiseLike<void>, ms, stage) : undefined;
      },
    };
  }
  const stage = 'request hook';
  const checked = (reply: void | Reply | undefined): Reply | undefined => (reply ? checkedReply(owner, reply, stage) : undefined);
  return {
    onRequest: (ex) => {
      let result: HookResult;
      try {
        result = hook.onRequest!(ex);
      } catch (err) {
        throw tagged(owner, err, stage);
      }
      if (result === undefined) return undefined;
      return isPromiseLike(result) ? settled(owner, result, ms, stage).then(checked) : checkedReply(owner, result, stage);
    },
  };
}

/**
 * A third-party `onResponse` (with its `onResponseHeaders`) or `onLog`. A response hook that leaves the reply
 * unwritable (ADR 0154) throws an UnwritableReply, synchronously or as its promise's rejection; the writer answers 500.
 * What it throws otherwise passes unchanged (the writer logs it naming the plugin). Nothing waits for an `onLog` or
 * `onResponseHeaders` promise (both are synchronous by contract): its rejection is logged here.
 */
function loggedHook(hook: PolicyInstance, owner: PluginOwner, kind: HookKind, logger: Logger): PolicyInstance {
  const logRejection = (ex: Exchange, done: unknown, what: string): void => {
    if (isPromiseLike(done)) done.then(undefined, (err: unknown) => logger.error(what, { route: ex.route.key, ...owner, error: err as Error }));
  };
  if (kind === 'log') return { onLog: (ex, status) => logRejection(ex, hook.onLog!(ex, status), 'log hook failed') };
  const left = (reply: Reply, thrown?: unknown): void => {
    const problem = replyProblem(reply);
    if (problem === undefined) return;
    const after = thrown === undefined ? '' : ` (after failing: ${(thrown as Error)?.message ?? String(thrown)})`;
    throw new UnwritableReply(owner, `response hook left ${problem}${after}`);
  };
  const wrapper: PolicyInstance = {
    onResponse: (ex, reply) => {
      let result: void | Promise<void>;
      try {
        result = hook.onResponse!(ex, reply);
      } catch (err) {
        left(reply, err);
        throw err;
      }
      if (!isPromiseLike(result)) return left(reply);
      return Promise.resolve(result).then(
        () => left(reply),
        (err: unknown) => {
          left(reply, err);
          throw err;
        },
      );
    },
  };
  if (hook.onResponseHeaders) wrapper.onResponseHeaders = (ex, status, list) => logRejection(ex, hook.onResponseHeaders!(ex, status, list), 'response hook failed');
  return wrapper;
}
