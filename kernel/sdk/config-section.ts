import type { JsonSchema } from './plugin.ts';
import { parseDuration } from './duration.ts';
import { ConfigError, ErrorCode } from './errors.ts';

/**
 * A section of the top-level `config:` block that a plugin owns (the `mcp` backend's `session`): its schema joins
 * the `config` object's, and `resolve` turns the raw value into what the plugin's `compile` reads through
 * `ctx.configSection(section)`. A section is resolved once per config load for every installed plugin that
 * contributes it, whether the config uses the plugin or not, so its errors (a bad environment variable) are reported
 * the same way every time. Resolving must be cheap and free of I/O.
 */
export interface ConfigSection<T = unknown> {
  /** The property of `config:` (`session`), or of the `parent` object. */
  readonly name: string;
  /**
   * A `config:` object of the gateway's that the section joins as one more property, so a plugin adds a field where
   * users expect it without the kernel knowing it: the `ai` backend's `llmBackendRequestTimeout` in
   * `defaultTimeouts`. Its `raw` is `config.<parent>.<name>`, its error paths `['config', parent, name, ...]`.
   */
  readonly parent?: string;
  /** JSON Schema of the value; every property should carry a `description`. */
  readonly schema: JsonSchema;
  /**
   * The section's value for this load (`raw` is undefined when the config has no such section). Throw a
   * `ConfigError` (path `['config', name, ...]`, or `['config', parent, name, ...]`) to stop the load.
   */
  resolve(raw: unknown, env: NodeJS.ProcessEnv): T;
}

/** Define a `config:` section; list it in the owning plugin's `configSections`. */
export function defineConfigSection<T>(section: ConfigSection<T>): ConfigSection<T> {
  return Object.freeze({ ...section });
}

/**
 * A section holding one duration (`10m`, `90s`), resolved to milliseconds (`0s`: 0), `defaultMs` when absent: the
 * `ai` backend's `defaultTimeouts.llmBackendRequestTimeout`, the `a2a` policy's `a2aBackendRequestTimeout`.
 */
export function defineDurationSection(options: { readonly name: string; readonly parent?: string; readonly description: string; readonly defaultMs: number }): ConfigSection<number> {
  const path = options.parent === undefined ? ['config', options.name] : ['config', options.parent, options.name];
  return defineConfigSection<number>({
    name: options.name,
    parent: options.parent,
    schema: { $ref: 'switchyard:defs#/$defs/duration', description: options.description },
    resolve(raw) {
      if (raw === undefined) return options.defaultMs;
      const ms = typeof raw === 'string' ? parseDuration(raw) : undefined;
      // The schema already checked the text; this guards a context that skipped validation.
      if (ms === undefined) throw new ConfigError({ code: ErrorCode.configInvalid, path, message: 'must be a duration such as `10m` or `90s`' });
      return ms;
    },
  });
}

