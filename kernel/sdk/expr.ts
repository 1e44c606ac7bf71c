import type { Exchange } from './exchange.ts';

/** A CEL expression compiled (parsed and type-checked) once at config load. */
export interface CompiledExpression {
  readonly source: string;
  /**
   * Evaluate against a request: variables `request`, `source` and every attribute published by earlier
   * policies (`jwt`, `apiKey`, `basicAuth`, ...), plus `extra` (for example `mcp`). Throws when evaluation fails
   * (a missing key, a type error); callers decide what a failure means.
   */
  evaluate(ex: Exchange, extra?: Record<string, unknown>): unknown;
}

/**
 * `name` of the error an evaluation throws when it ran past its budget (docs/cel.md#limits): the input, not the
 * rule, is at fault, so a policy may choose an outcome other than its usual one for errors (a deny rule denies).
 */
export const EXPRESSION_STOPPED = 'ExpressionStopped';

/** Compiles CEL for plugins. */
export interface ExpressionCompiler {
  /**
   * Compile `source`; a syntax or type error becomes a config error at the plugin's path plus `sub`. `unavailable`:
   * variables that exist elsewhere but are never set where this expression runs, each with the reason the config
   * error gives (so a rule that would fail on every request fails at load instead).
   */
  compile(source: string, sub?: readonly (string | number)[], unavailable?: Readonly<Record<string, string>>): CompiledExpression;
}

/** Render a CEL value as a header or log string (ints come back from CEL as bigint). */
export function celValueToString(value: unknown): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'bigint' || typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (value instanceof Uint8Array) return Buffer.from(value).toString('utf8');
  return JSON.stringify(value, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v instanceof Map ? Object.fromEntries(v) : v));
}
