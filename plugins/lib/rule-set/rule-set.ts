/**
 * CEL rule lists shared by `authorization` and `mcpAuthorization` (BEHAVIOUR.md §5.5, DECIDED 3): compiled once at
 * load, decided per request (or per MCP item, with extra variables such as `mcp`).
 */
import { EXPRESSION_STOPPED } from 'switchyard/sdk';
import type { CompiledExpression, Exchange, ExpressionCompiler } from 'switchyard/sdk';

/** A rule as written: a string (allow) or `{allow|deny|require: expr}`. */
export type RuleConfig = string | { allow: string } | { deny: string } | { require: string };

export type RuleKind = 'allow' | 'deny' | 'require';

/** The compiled rules of one policy, split by kind. */
export interface RuleSet {
  readonly allow: readonly CompiledExpression[];
  readonly deny: readonly CompiledExpression[];
  readonly require: readonly CompiledExpression[];
}

/** A rule set without rules: allows everything. */
export const EMPTY_RULE_SET: RuleSet = Object.freeze({ allow: [], deny: [], require: [] });

/** Checked result types a rule may have: a boolean, or a value only known at run time. */
const RULE_TYPES = new Set(['bool', 'dyn']);

/**
 * Compile every rule at load. A syntax or type error, or an expression whose type can never be a boolean, is a
 * config error at the rule (`rules[i]` or `rules[i].<kind>`).
 */
export function compileRules(
  rules: readonly RuleConfig[],
  expr: ExpressionCompiler,
  fail: (message: string, sub: (string | number)[]) => never,
  unavailable?: Readonly<Record<string, string>>,
): RuleSet {
  const out: { allow: CompiledExpression[]; deny: CompiledExpression[]; require: CompiledExpression[] } = { allow: [], deny: [], require: [] };
  rules.forEach((rule, i) => {
    const [kind, source, sub]: [RuleKind, string, (string | number)[]] = typeof rule === 'string' ? ['allow', rule, ['rules', i]] : ruleEntry(rule, i);
    const compiled = expr.compile(source, sub, unavailable);
    // The kernel's compiler reports the checked type; a non-boolean rule could never allow anything.
    const type = (compiled as { type?: unknown }).type;
    if (typeof type === 'string' && !RULE_TYPES.has(type)) fail(`a rule must be a boolean expression; \`${source}\` is of type \`${type}\``, sub);
    out[kind].push(compiled);
  });
  return out;
}

function ruleEntry(rule: Exclude<RuleConfig, string>, i: number): [RuleKind, string, (string | number)[]] {
  const kind = (Object.keys(rule) as RuleKind[])[0]!;
  return [kind, (rule as Record<RuleKind, string>)[kind], ['rules', i, kind]];
}

/** True when the set has no rule at all (it allows everything). */
export function isEmptyRuleSet(rules: RuleSet): boolean {
  return rules.allow.length + rules.deny.length + rules.require.length === 0;
}

/** Rule lists of several levels (route, backend) concatenated: a deny anywhere denies, allows OR across levels. */
export function concatRuleSets(a: RuleSet, b: RuleSet): RuleSet {
  if (isEmptyRuleSet(a)) return b;
  if (isEmptyRuleSet(b)) return a;
  return { allow: [...a.allow, ...b.allow], deny: [...a.deny, ...b.deny], require: [...a.require, ...b.require] };
}

/**
 * True only for a rule that evaluates to `true`; errors and non-booleans are false (DECIDED 3). An evaluation the
 * budget stopped gives `stopped` instead: the client's input made it blow up, so a deny rule must not be skipped
 * for it (docs/adr/0145).
 */
function holds(rule: CompiledExpression, ex: Exchange, extra: Record<string, unknown> | undefined, stopped = false): boolean {
  try {
    return rule.evaluate(ex, extra) === true;
  } catch (err) {
    return (err as Error | undefined)?.name === EXPRESSION_STOPPED ? stopped : false;
  }
}

/**
 * BEHAVIOUR.md §5.5 / DECIDED 3: no rules => allow; any deny true (or stopped by the budget) => deny; any require
 * not true => deny; any allow true => allow; otherwise allow only when there are no allow rules. `extra` adds variables (`mcp`) to the request's.
 */
export function decide(rules: RuleSet, ex: Exchange, extra?: Record<string, unknown>): boolean {
  for (const r of rules.deny) if (holds(r, ex, extra, true)) return false;
  for (const r of rules.require) if (!holds(r, ex, extra)) return false;
  if (rules.allow.length === 0) return true;
  for (const r of rules.allow) if (holds(r, ex, extra)) return true;
  return false;
}
