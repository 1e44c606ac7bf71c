import type { RegisteredPlugin } from '../registry/registry.ts';

/** Log fields naming the plugin that compiled a hook: its key and, for a third-party plugin, its package (ADR 0144). */
export interface PluginOwner {
  readonly plugin: string;
  readonly package?: string;
}

/** The plugin of each compiled instance, for the log line of a hook that fails; weak, so a retired snapshot goes. */
const owners = new WeakMap<object, PluginOwner>();

/** The log fields naming `registered`: its key and, for a third-party plugin, its package. */
export function pluginOwner(registered: RegisteredPlugin): PluginOwner {
  const { plugin, source } = registered;
  return source.name === 'switchyard' ? { plugin: plugin.key } : { plugin: plugin.key, package: source.name };
}

/** Record which plugin compiled `instance` (policy, backend or variant instances). */
export function ownInstance(instance: unknown, registered: RegisteredPlugin): void {
  if (typeof instance !== 'object' || instance === null) return;
  owners.set(instance, pluginOwner(registered));
}

/** Record `owner` for an object standing in for an instance (a bounded backend). */
export function ownAs(instance: object, owner: PluginOwner): void {
  owners.set(instance, owner);
}

/** The plugin that compiled `instance`, or undefined for the kernel's own hooks. */
export function ownerOf(instance: unknown): PluginOwner | undefined {
  return typeof instance === 'object' && instance !== null ? owners.get(instance) : undefined;
}

/**
 * A request hook failed with something other than a GatewayError (a bug in the plugin), or never settled: the cause,
 * and the plugin whose hook it was. The message (the cause's unless given) is for the log; `errorReply` logs the owner
 * beside it and answers the cause when it is a GatewayError (a hook that never settled: 504), else 500.
 */
export class PluginHookError extends Error {
  readonly owner: PluginOwner | undefined;
  override readonly cause: unknown;
  /** What failed, for the log line: `request hook` or `backend`. */
  readonly stage: string;
  constructor(owner: PluginOwner | undefined, cause: unknown, message?: string, stage = 'request hook') {
    super(message ?? (cause as Error)?.message ?? String(cause));
    this.name = 'PluginHookError';
    this.owner = owner;
    this.cause = cause;
    this.stage = stage;
  }
}

/**
 * A third-party response hook left its reply unwritable (ADR 0154: a body that is an object, no headers): the response
 * writer answers 500 instead of writing it (`message` says what was wrong, for the log).
 */
export class UnwritableReply extends PluginHookError {
  constructor(owner: PluginOwner, message: string) {
    super(owner, new TypeError(message), message, 'response hook');
    this.name = 'UnwritableReply';
  }
}

/** Errors a third-party variant's method threw, with the variant that threw them (ADR 0154); weak, like `owners`. */
const failures = new WeakMap<object, { readonly owner: PluginOwner; readonly stage: string }>();

/** Remember that `err` came out of `owner`'s code at `stage` (the error itself is left as it is, class and all). */
export function markFailure(err: unknown, owner: PluginOwner, stage: string): void {
  if (typeof err === 'object' && err !== null && !failures.has(err)) failures.set(err, { owner, stage });
}

/** The plugin an error came out of, when a tagged variant threw it. */
export function failureOwner(err: unknown): { readonly owner: PluginOwner; readonly stage: string } | undefined {
  return typeof err === 'object' && err !== null ? failures.get(err) : undefined;
}
