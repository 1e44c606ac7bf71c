import { ErrorCode, FILE_SIZE_LIMITS, readLocalFile } from '../sdk/index.ts';
import type { ConfigSource, SourcedIssue } from './config-source.ts';
import { parseConfigSource } from './config-source.ts';
import { expandEnv } from './expand-env.ts';
import { ConfigLoadError, positionIssue } from './format-issues.ts';
import type { ConfigValidator } from './validate-config.ts';

/** A config that parsed and validated: the plain object plus the source for positioning later errors. */
export interface LoadedConfig {
  readonly source: ConfigSource;
  readonly value: Record<string, unknown>;
}

/** Parse, expand `${VAR}`, and validate config text. Throws ConfigLoadError with every problem positioned. */
export function loadConfigText(file: string, text: string, validator: ConfigValidator, env: NodeJS.ProcessEnv = process.env): LoadedConfig {
  const source = parseConfigSource(file, text);
  if (source.doc.errors.length > 0) {
    const issues: SourcedIssue[] = source.doc.errors.map((e) => ({
      code: ErrorCode.configSyntax,
      path: [],
      offset: e.pos[0],
      message: `YAML syntax error: ${e.message.split('\n')[0]!.replace(/ at line \d+, column \d+:?$/, '')}`,
    }));
    throw new ConfigLoadError(issues.map((i) => positionIssue(source, i)));
  }
  const envIssues = expandEnv(source, env);
  if (envIssues.length > 0) throw new ConfigLoadError(envIssues.map((i) => positionIssue(source, i)));
  const value = (source.doc.toJS({ maxAliasCount: 1000 }) ?? {}) as unknown;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ConfigLoadError([positionIssue(source, { code: ErrorCode.configSchema, path: [], message: 'the config must be a mapping with `binds` and `backends`' })]);
  }
  const issues = validator.validate(value);
  if (issues.length > 0) throw new ConfigLoadError(issues.map((i) => positionIssue(source, i)));
  return { source, value: value as Record<string, unknown> };
}

/**
 * Read the config file (a regular file of at most FILE_SIZE_LIMITS.config, without blocking the event loop).
 * A failure is reported like a config error, at the top of the file.
 */
export async function readConfigFile(file: string): Promise<string> {
  try {
    return await readLocalFile(file, FILE_SIZE_LIMITS.config);
  } catch (err) {
    throw new ConfigLoadError([
      { file, line: 1, col: 1, path: '(root)', code: ErrorCode.configIo, message: `cannot read the config file: ${(err as Error).message}`, frame: '' },
    ]);
  }
}
