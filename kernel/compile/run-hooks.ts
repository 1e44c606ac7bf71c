import { ErrorCode, GatewayError, settleWithin } from '../sdk/index.ts';
import type { BackendChoice, BackendInstance, BackendSelector, Exchange, PolicyInstance, Reply, UpstreamAttempt } from '../sdk/index.ts';
import { PluginHookError, ownAs, ownerOf } from './plugin-owner.ts';
import type { PluginOwner } from './plugin-owner.ts';
import { replyProblem } from './reply-check.ts';

type HookResult = void | Reply | undefined | Promise<void | Reply | undefined>;

function isThenable(value: unknown): value is PromiseLike<void | Reply | undefined> {
  return typeof (value as { then?: unknown } | undefined)?.then === 'function';
}

/** A failure of `owner`'s code, tagged with it: a GatewayError is an answer the code chose and passes unchanged. */
function tagged(owner: PluginOwner | undefined, err: unknown, stage: string): unknown {
  return err instanceof GatewayError || err instanceof PluginHookError ? err : new PluginHookError(owner, err, undefined, stage);
}

/** A hook's failure, tagged with its plugin. */
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
 * PluginHookError naming the plugin (a 500), not a TypeError that ends the process. The distribution's own replies
 * are not checked (`owner` undefined or without a package).
 */
function checkedReply<T>(owner: PluginOwner | undefined, reply: T, stage: string): T {
  if (owner?.package === undefined) return reply;
  const problem = replyProblem(reply);
  if (problem !== undefined) throw new PluginHookError(owner, new TypeError(`${stage} returned ${problem}`), undefined, stage);
  return reply;
}

/**
 * A third-party hook's promise, bounded (ADR 0144): past `ms` the request answers 504 and the log names the plugin.
 * First-party hooks bound their own waits (each remote call has its deadline), so they pay no timer.
 */
function bounded<T>(hook: PolicyInstance, pending: PromiseLike<T>, ms: number, stage = 'request hook'): PromiseLike<T> {
  if (ms <= 0) return pending;
  const owner = ownerOf(hook);
  if (owner?.package === undefined) return pending;
  return settleWithin(pending, ms, () => notSettled(owner, ms, `policy \`${owner.plugin}\` did not settle its ${stage} within ${ms}ms`, stage));
}

/**
 * One `onUpstream` hook before an attempt: undefined when it finished at once, else its promise. Failures are tagged
 * and a third-party hook is bounded by `deadlineMs` (the attempt's response deadline; 0: none) as request hooks are.
 */
export function runUpstreamHook(hook: PolicyInstance, ex: Exchange, attempt: UpstreamAttempt, deadlineMs: number): PromiseLike<void> | undefined {
  let result: void | Promise<void>;
  try {
    result = hook.onUpstream!(ex, attempt);
  } catch (err) {
    throw failure(hook, err, 'upstream hook');
  }
  if (!isThenable(result)) return undefined;
  return Promise.resolve(bounded(hook, result as PromiseLike<void>, deadlineMs, 'upstream hook')).then(undefined, (err: unknown) => {
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
      throw failure(policy, err, stage);
    }
    if (!isThenable(choice)) return checked(choice as BackendChoice);
    return Promise.resolve(bounded(policy, choice as PromiseLike<BackendChoice>, ms, stage)).then(checked, (err: unknown) => {
      throw failure(policy, err, stage);
    });
  };
}

/**
 * Walk request hooks from `start`. Sync hooks are not awaited: the chain only becomes async at the first hook
 * that returns a promise. A returned Reply stops the chain. A hook's exception (other than a GatewayError) comes out
 * as a PluginHookError naming its plugin; a third-party hook's promise that has not settled after `deadlineMs`
 * (0: none) rejects with one answering 504.
 */
export function runRequestHooks(hooks: readonly PolicyInstance[], ex: Exchange, start = 0, deadlineMs = 0): Reply | undefined | Promise<Reply | undefined> {
  for (let i = start; i < hooks.length; i++) {
    const hook = hooks[i]!;
    let result: HookResult;
    try {
      result = hook.onRequest!(ex);
    } catch (err) {
      throw failure(hook, err);
    }
    if (result === undefined) continue;
    if (isThenable(result)) {
      return Promise.resolve(bounded(hook, result, deadlineMs)).then(
        (reply) => (reply ? checkedReply(ownerOf(hook), reply, 'request hook') : runRequestHooks(hooks, ex, i + 1, deadlineMs)),
        (err: unknown) => {
          throw failure(hook, err);
        },
      );
    }
    return checkedReply(ownerOf(hook), result as Reply, 'request hook');
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
    if (!isThenable(reply)) return checkedReply(owner, reply, 'backend');
    const pending = ms > 0 ? settleWithin(reply as PromiseLike<Reply>, ms, timedOut) : Promise.resolve(reply);
    return pending.then(
      (answer) => checkedReply(owner, answer, 'backend'),
      (err: unknown) => {
        throw tag(err);
      },
    );
  };
  Object.defineProperty(bounded, 'handle', { value: handle, enumerable: true });
  ownAs(bounded, owner);
  return bounded;
}
