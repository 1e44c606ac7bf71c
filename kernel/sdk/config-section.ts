import type { JsonSchema } from './plugin.ts';

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
