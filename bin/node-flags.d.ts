/** See node-flags.js: the Node options the CLI runs with (ADR 0041, 0057). */
export const NODE_FLAGS: readonly string[];
/** See node-flags.js: environment variables set on the CLI's re-execution unless already set. */
export const NODE_ENV_DEFAULTS: Readonly<Record<string, string>>;
/** The flags of NODE_FLAGS not given on node's command line or in NODE_OPTIONS (compared by name). */
export function missingNodeFlags(execArgv: readonly string[], nodeOptions: string | undefined): string[];
/** `env` with NODE_ENV_DEFAULTS for the variables it does not set. */
export function withEnvDefaults(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv;
