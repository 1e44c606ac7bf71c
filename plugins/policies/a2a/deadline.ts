import { ConfigError, defineConfigSection, ErrorCode, parseDuration } from 'switchyard/sdk';

/** As long as an LLM call's (ADR 0019): an agent's blocking answer waits for its task, which waits for its model. */
const DEFAULT_MS = 600_000;

/**
 * `config.defaultTimeouts.a2aBackendRequestTimeout`: the default deadline for an agent's response headers on routes
 * with the `a2a` policy, in ms (0 = none), where no `timeout` policy applies. A blocking `SendMessage` answers when
 * the agent's task is done, and the plain 15 s default cut most LLM-driven agents off with a 504.
 */
export const a2aDeadlineSection = defineConfigSection<number>({
  parent: 'defaultTimeouts',
  name: 'a2aBackendRequestTimeout',
  schema: {
    $ref: 'switchyard:defs#/$defs/duration',
    description: 'The same for agents on routes with the `a2a` policy: a blocking `SendMessage` answers when its task is done. Default `10m`.',
  },
  resolve(raw) {
    if (raw === undefined) return DEFAULT_MS;
    const ms = typeof raw === 'string' ? parseDuration(raw) : undefined;
    // The schema already checked the text; this guards a context that skipped validation.
    if (ms === undefined) {
      throw new ConfigError({ code: ErrorCode.configInvalid, path: ['config', 'defaultTimeouts', 'a2aBackendRequestTimeout'], message: 'must be a duration such as `10m` or `90s`' });
    }
    return ms;
  },
});
