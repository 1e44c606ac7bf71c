// The rule logic is shared with `mcpAuthorization`: one implementation of BEHAVIOUR.md §5.5 / DECIDED 3.
export { compileRules, decide } from '../../lib/rule-set/rule-set.ts';
export type { RuleConfig, RuleKind, RuleSet } from '../../lib/rule-set/rule-set.ts';
