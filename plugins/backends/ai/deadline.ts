import { defineDurationSection } from 'switchyard/sdk';

/**
 * `config.defaultTimeouts.llmBackendRequestTimeout`: the `ai` backend's own default deadline for a provider's
 * response headers, in ms (0 = none), where a route or backend has no `timeout` policy. A property the `ai` backend
 * adds to the kernel's `defaultTimeouts` (the kernel knows no LLM), so configs keep the key where it always was.
 * 10 minutes: what the providers' official SDKs wait for an answer (ADR 0019).
 */
export const llmDeadlineSection = defineDurationSection({
  parent: 'defaultTimeouts',
  name: 'llmBackendRequestTimeout',
  description: 'The same for LLM providers (`ai` backends): non-streaming completions take long. Default `10m`.',
  defaultMs: 600_000,
});
