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
  /**
   * Whether the expression reads the variable `name` (a macro's variable of that name aside): a policy that runs
   * only some backends set a variable for can require them (`requiresBackendProtocol`). Set by the gateway's compiler.
   */
  reads?(name: string): boolean;
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
   * error gives (so a rule that would fail on every request fails at load instead). A dotted name (`llm.inputTokens`)
   * refuses that field of the variable only. The gateway adds the variables only a route's own policies set
   * (`jwt`, `apiKey`, `key`, `basicAuth`) on a route without such a policy (ADR 0179).
   */
  compile(source: string, sub?: readonly (string | number)[], unavailable?: Readonly<Record<string, string>>): CompiledExpression;
}

// `unavailable` lists for `ExpressionCompiler.compile` (ADR 0176): a name every plugin's CEL declares but that is
// set only while one policy evaluates its own expressions (`mcp`, `llmRequest`, passed as `extra`), or only once an
// `ai` backend makes its call (`llm`). Used anywhere else it would fail on every request, so it is a load error.
const MCP_ONLY = 'here: it is set only in `mcpAuthorization` rules, once per MCP tool, prompt and resource';
const BODY_ONLY = "here: the client's LLM request body is read only in `ai` policy expressions (`transformations`, `virtualModels` conditions)";
const BEFORE_CALL = 'before the `ai` backend calls the model, which sets it: read `llm` in response `transformations` or `config.logging`';

/** Names only their own policy's expressions see: for expressions run once the response is known (and the log). */
export const CEL_NOT_SET_HERE: Readonly<Record<string, string>> = Object.freeze({ mcp: MCP_ONLY, llmRequest: BODY_ONLY });
const BEFORE_GUARDS = 'before the `ai` backend runs the prompt guards, which set it: read `llmGuards` in response `transformations` or `config.logging`';

/** For expressions evaluated on the request, before any backend runs: `llm` and `llmGuards` are not set yet either. */
export const CEL_NOT_SET_BEFORE_BACKEND: Readonly<Record<string, string>> = Object.freeze({ ...CEL_NOT_SET_HERE, llm: BEFORE_CALL, llmGuards: BEFORE_GUARDS });

/** The fields of `llm` (the `ai` backend's call): counts and cost known once the answer arrived. */
const LLM_FIELDS = ['provider', 'requestModel', 'responseModel', 'streaming', 'inputTokens', 'outputTokens', 'totalTokens', 'cachedInputTokens', 'cacheCreationInputTokens', 'reasoningTokens', 'cost', 'inputTokensEstimated', 'outputTokensEstimated'];

/**
 * `unavailable` entries for an expression that sees `llm` as the call about to be made, with only the fields `set`
 * (`promptTokens`, the prompt estimate, among them): every other field of the call, which the backend sets once it
 * made it, would fail on every request (ADR 0179). `where` ends "... is not available `where`".
 */
export function celLlmBeforeCall(where: string, set: readonly string[]): Readonly<Record<string, string>> {
  const reason = `${where}: it runs before the \`ai\` backend calls the model, when \`llm\` holds only ${set.map((f) => `\`${f}\``).join(', ')}`;
  const near = (field: string): string | undefined => (field.endsWith('Tokens') ? 'promptTokens' : field === 'responseModel' ? 'requestModel' : undefined);
  const out: Record<string, string> = {};
  for (const field of LLM_FIELDS) {
    if (set.includes(field)) continue;
    const guess = near(field);
    out[`llm.${field}`] = guess !== undefined && set.includes(guess) ? `${reason}; did you mean \`llm.${guess}\`?` : reason;
  }
  return Object.freeze(out);
}

/** Render a CEL value as a header or log string (ints come back from CEL as bigint). */
export function celValueToString(value: unknown): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'bigint' || typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (value instanceof Uint8Array) return Buffer.from(value).toString('utf8');
  return JSON.stringify(value, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v instanceof Map ? Object.fromEntries(v) : v));
}
