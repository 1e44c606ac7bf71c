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

/** Checked result types a rule may have: a boolean, or a value only known at run time. */
const RULE_TYPES = new Set(['bool', 'dyn']);

/**
 * Compile every rule at load. A syntax or type error, or an expression whose type can never be a boolean
 * (`request.path == 1` is fine, `request.method + "x"` is not), is a config error at the rule.
 */
export function compileRules(rules: readonly RuleConfig[], expr: ExpressionCompiler, fail: (message: string, sub: (string | number)[]) => never): RuleSet {
  const out: { allow: CompiledExpression[]; deny: CompiledExpression[]; require: CompiledExpression[] } = { allow: [], deny: [], require: [] };
  rules.forEach((rule, i) => {
    const [kind, source, sub]: [RuleKind, string, (string | number)[]] =
      typeof rule === 'string' ? ['allow', rule, ['rules', i]] : ruleEntry(rule, i);
    const compiled = expr.compile(source, sub);
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

/** True only for a rule that evaluates to `true`; errors and non-booleans are false (DECIDED 3). */
function holds(rule: CompiledExpression, ex: Exchange): boolean {
  try {
    return rule.evaluate(ex) === true;
  } catch {
    return false;
  }
}

/**
 * BEHAVIOUR.md §5.5 / DECIDED 3: no rules ⇒ allow; any deny true ⇒ deny; any require not true ⇒ deny; any allow
 * true ⇒ allow; otherwise allow only when there are no allow rules.
 */
export function decide(rules: RuleSet, ex: Exchange): boolean {
  for (const r of rules.deny) if (holds(r, ex)) return false;
  for (const r of rules.require) if (!holds(r, ex)) return false;
  if (rules.allow.length === 0) return true;
  for (const r of rules.allow) if (holds(r, ex)) return true;
  return false;
}
