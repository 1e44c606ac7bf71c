import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { CompiledExpression, Exchange, ExpressionCompiler } from 'switchyard/sdk';
import { compileRules, concatRuleSets, decide, EMPTY_RULE_SET, isEmptyRuleSet } from './rule-set.ts';
import type { RuleConfig } from './rule-set.ts';

// A stand-in compiler: the "expression" names its outcome (`true`, `false`, `error`, `string`, `extra`).
const compiler: ExpressionCompiler = {
  compile(source): CompiledExpression {
    return {
      source,
      evaluate: (_ex, extra) => {
        if (source === 'error') throw new Error('boom');
        if (source === 'string') return 'true';
        if (source === 'extra') return (extra as { ok?: boolean } | undefined)?.ok === true;
        return source === 'true';
      },
    };
  },
};
const fail = (message: string): never => {
  throw new Error(message);
};
const ex = {} as Exchange;
const allowed = (rules: RuleConfig[], extra?: Record<string, unknown>): boolean => decide(compileRules(rules, compiler, fail), ex, extra);

describe('rule sets (DECIDED 3, BEHAVIOUR.md §5.5)', () => {
  it('no rules allow; allows OR, requires AND, denies veto; errors are false', () => {
    assert.equal(allowed([]), true);
    assert.equal(allowed(['false', 'true']), true);
    assert.equal(allowed(['false', 'error', 'string']), false);
    assert.equal(allowed(['true', { deny: 'true' }]), false);
    assert.equal(allowed([{ deny: 'error' }]), true);
    assert.equal(allowed([{ require: 'error' }]), false);
  });
  it('passes extra variables to every rule', () => {
    assert.equal(allowed(['extra'], { ok: true }), true);
    assert.equal(allowed(['extra']), false);
  });
  it('concatenates levels', () => {
    const a = compileRules(['false'], compiler, fail);
    const b = compileRules(['true'], compiler, fail);
    const d = compileRules([{ deny: 'true' }], compiler, fail);
    assert.equal(decide(concatRuleSets(a, b), ex), true);
    assert.equal(decide(concatRuleSets(b, d), ex), false);
    assert.equal(concatRuleSets(EMPTY_RULE_SET, a), a);
    assert.equal(isEmptyRuleSet(EMPTY_RULE_SET), true);
  });
  it('reports the position of a non-boolean rule', () => {
    const typed: ExpressionCompiler = { compile: (source) => ({ source, type: 'string', evaluate: () => '' }) as CompiledExpression };
    assert.throws(() => compileRules([{ deny: 'request.path' }], typed, (m, sub) => fail(`${m} at ${sub.join('.')}`)), /must be a boolean expression.*at rules\.0\.deny/);
  });
});
