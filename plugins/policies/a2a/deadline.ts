import { defineDurationSection } from 'switchyard/sdk';

/**
 * `config.defaultTimeouts.a2aBackendRequestTimeout`: the default deadline for an agent's response headers on routes
 * with the `a2a` policy, in ms (0 = none), where no `timeout` policy applies. A blocking `SendMessage` answers when
 * the agent's task is done, and the plain 15 s default cut most LLM-driven agents off with a 504; 10 minutes, as an
 * LLM call's (ADR 0019).
 */
export const a2aDeadlineSection = defineDurationSection({
  parent: 'defaultTimeouts',
  name: 'a2aBackendRequestTimeout',
  description: 'The same for agents on routes with the `a2a` policy: a blocking `SendMessage` answers when its task is done. Default `10m`.',
  defaultMs: 600_000,
});
