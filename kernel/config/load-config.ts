import { ErrorCode, FILE_SIZE_LIMITS, readLocalFile } from '../sdk/index.ts';
import type { ConfigSource, SourcedIssue } from './config-source.ts';
import { lazyConfigSource, parseConfigSource } from './config-source.ts';
import { expandEnv } from './expand-env.ts';
import { parseWithoutPositions } from '../sdk/fast-parse.ts';
import { ConfigLoadError } from './format-issues.ts';
import { collectSecrets } from './redact-config.ts';
import { positionRedacted } from './redact-issues.ts';
import { SecretMarks } from './secret-marks.ts';
import type { ConfigValidator } from './validate-config.ts';

/** A config that parsed and validated: the plain object plus the source for positioning later errors. */
export interface LoadedConfig {
  readonly source: ConfigSource;
  readonly value: Record<string, unknown>;
  /** Where its secrets are (ADR 0017): for `/config_dump` and for positioning later errors. */
  readonly secrets: SecretMarks;
  /** Every secret string of the config, for the process log to scrub. */
  readonly hidden: ReadonlySet<string>;
}

/** Config text parsed and `${VAR}`-expanded, not yet validated (the schema needs the plugin list it names). */
export interface ParsedConfig {
  readonly source: ConfigSource;
  readonly value: unknown;
  readonly secrets: SecretMarks;
  /** Unset variables: reported after validation, so their frames know where the secrets are. */
  readonly envIssues: readonly SourcedIssue[];
  /** Parsed without positions (fast-parse.ts): an invalid config is parsed again with them before reporting. */
  readonly positionless?: boolean;
}

/**
 * Parse and expand `${VAR}`. Throws ConfigLoadError on a YAML syntax error. Valid text without `${` and the like
 * is parsed without node positions (fast-parse.ts, about 6× faster); `positions` forces the positioned parse.
 */
export function parseConfigText(file: string, text: string, env: NodeJS.ProcessEnv = process.env, positions = false): ParsedConfig {
  const fast = positions ? undefined : parseConfigFast(file, text);
  if (fast !== undefined) return fast;
  const source = parseConfigSource(file, text);
  if (source.doc.errors.length > 0) {
    const issues: SourcedIssue[] = source.doc.errors.map((e) => ({
      code: ErrorCode.configSyntax,
      path: [],
      offset: e.pos[0],
      message: `YAML syntax error: ${e.message.split('\n')[0]!.replace(/ at line \d+, column \d+:?$/, '')}`,
    }));
    throw new ConfigLoadError(positionRedacted(source, issues, undefined));
  }
  const secrets = new SecretMarks();
  const envIssues = expandEnv(source, env, secrets);
  const value = (source.doc.toJS({ maxAliasCount: 1000 }) ?? {}) as unknown;
  return { source, value, secrets, envIssues };
}

/** {@link parseConfigText}'s fast parse only: undefined when the text needs the positioned one (or does not parse). */
export function parseConfigFast(file: string, text: string): ParsedConfig | undefined {
  const fast = parseWithoutPositions(text);
  return fast === undefined ? undefined : { source: lazyConfigSource(file, text), value: fast, secrets: new SecretMarks(), envIssues: [], positionless: true };
}

/**
 * `config.plugins` of a parsed config (third-party plugin modules to load before validating); empty when a
 * variable is unset, which the full load then reports with its position.
 */
export function pluginListOf(parsed: ParsedConfig): string[] {
  if (parsed.envIssues.length > 0) return [];
  const list = (parsed.value as { config?: { plugins?: unknown } } | null)?.config?.plugins;
  return Array.isArray(list) ? list.filter((p): p is string => typeof p === 'string') : [];
}

/**
 * Validate a parsed config. Throws ConfigLoadError with every problem positioned. `passed`: `validator.passes` said
 * it is valid (and marked its secrets) already.
 */
export function validateParsed(parsed: ParsedConfig, validator: ConfigValidator, passed = false): LoadedConfig {
  const { source, value, secrets, envIssues } = parsed;
  // An invalid config parsed without positions: report exactly what the positioned parse reports.
  const again = (): LoadedConfig => validateParsed(parseConfigText(source.file, source.text, {}, true), validator);
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    if (parsed.positionless) return again();
    const issue = { code: ErrorCode.configSchema, path: [], message: 'the config must be a mapping with `binds` and `backends`' };
    throw new ConfigLoadError(positionRedacted(source, envIssues.length > 0 ? envIssues : [issue], secrets));
  }
  // Validated even when a variable is missing, so the frames of those errors know where the secrets are.
  const issues = passed ? [] : validator.validate(value, secrets, parsed.positionless === true);
  if (issues.length > 0 && parsed.positionless) {
    // Placed by the positioned parse of the same text, which gives the same value (fast-parse.ts); validated once:
    // the problems, and the secrets the schema marked, are those of the same paths (ADR 0179).
    const placed = parseConfigText(source.file, source.text, {}, true).source;
    throw new ConfigLoadError(positionRedacted(placed, issues, secrets, value));
  }
  secrets.bindEnv(value);
  if (envIssues.length > 0) throw new ConfigLoadError(positionRedacted(source, envIssues, secrets, value));
  if (issues.length > 0) throw new ConfigLoadError(positionRedacted(source, issues, secrets, value));
  const hidden = new Set<string>();
  collectSecrets(value, secrets, hidden);
  return { source, value: value as Record<string, unknown>, secrets, hidden };
}

const NON_SPACE = /\S/g;

/**
 * Whether `text` holds nothing but white space and `#` comment lines. One pass, stopping at the first other line: a
 * single regex for this backtracks exponentially over comment lines holding `#` or spaces (a banner took minutes).
 */
export function blankOrCommentsOnly(text: string): boolean {
  let at = 0;
  for (;;) {
    NON_SPACE.lastIndex = at;
    const found = NON_SPACE.exec(text);
    if (found === null) return true;
    if (text.charCodeAt(found.index) !== 35 /* # */) return false;
    const eol = text.indexOf('\n', found.index);
    if (eol === -1) return true;
    at = eol + 1;
  }
}

/**
 * Read the config file (a regular file of at most FILE_SIZE_LIMITS.config, without blocking the event loop).
 * A failure is reported like a config error, at the top of the file.
 */
export async function readConfigFile(file: string): Promise<string> {
  let text: string;
  try {
    text = await readLocalFile(file, FILE_SIZE_LIMITS.config);
  } catch (err) {
    throw new ConfigLoadError([
      { file, line: 1, col: 1, path: '(root)', code: ErrorCode.configIo, message: `cannot read the config file: ${(err as Error).message}`, frame: '' },
    ]);
  }
  // Blank or comments only: most often a save caught between its truncation and its write, which would close every
  // bind on a reload. `binds: []` says "nothing" on purpose (ADR 0185).
  if (blankOrCommentsOnly(text)) {
    const message = 'the config file is empty (write `binds: []` for a gateway that serves nothing)';
    throw new ConfigLoadError([{ file, line: 1, col: 1, path: '(root)', code: ErrorCode.configIo, message, frame: '' }]);
  }
  return text;
}
