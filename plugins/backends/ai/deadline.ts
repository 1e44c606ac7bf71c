import { ConfigError, defineConfigSection, ErrorCode, parseDuration } from 'switchyard/sdk';

/** The 10 minutes the providers' official SDKs wait for an answer (ADR 0019). */
const DEFAULT_MS = 600_000;

/**
 * `config.defaultTimeouts.llmBackendRequestTimeout`: the `ai` backend's own default deadline for a provider's
 * response headers, in ms (0 = none), where a route or backend has no `timeout` policy. A property the `ai` backend
 * adds to the kernel's `defaultTimeouts` (the kernel knows no LLM), so configs keep the key where it always was.
 */
export const llmDeadlineSection = defineConfigSection<number>({
  parent: 'defaultTimeouts',
  name: 'llmBackendRequestTimeout',
  schema: {
    $ref: 'switchyard:defs#/$defs/duration',
    description: 'The same for LLM providers (`ai` backends): non-streaming completions take long. Default `10m`.',
  },
  resolve(raw) {
    if (raw === undefined) return DEFAULT_MS;
    const ms = typeof raw === 'string' ? parseDuration(raw) : undefined;
    // The schema already checked the text; this guards a context that skipped validation.
    if (ms === undefined) {
      throw new ConfigError({ code: ErrorCode.configInvalid, path: ['config', 'defaultTimeouts', 'llmBackendRequestTimeout'], message: 'must be a duration such as `10m` or `90s`' });
    }
    return ms;
  },
});
