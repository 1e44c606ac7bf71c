import type { ConfigPath } from './compile-context.ts';
import { ConfigError, ErrorCode } from './errors.ts';
import type { ConfigIssue } from './errors.ts';

/** Where the answer of the admin UI's validator sends an operator for the full check. */
export const CHECK_ON_HOST = 'run `switchyard --validate-only` on the gateway\'s host to check it';

/** The warning of the admin UI's validator that `what`, at `path`, was left unchecked (ADR 0131). */
export function notCheckedIssue(path: ConfigPath, what: string): ConfigIssue {
  return {
    code: ErrorCode.configUnchecked,
    path,
    message: `${what} is not checked here: the admin UI's validator reads no file and reaches no store or server a pasted config names; ${CHECK_ON_HOST}`,
  };
}

/**
 * Stop a compile under `ctx.checkOnly` (the admin UI's validator, ADR 0131) at `sub`, where `what` (a file, a store,
 * a URL the config names) would be read, opened or fetched: the validator answers with a warning, never with what
 * the file holds or whether it exists.
 */
export function notChecked(ctx: { readonly path: ConfigPath }, what: string, sub: ConfigPath = []): never {
  throw new ConfigError(notCheckedIssue([...ctx.path, ...sub], what));
}
