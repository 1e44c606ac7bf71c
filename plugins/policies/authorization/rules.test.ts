import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { CompiledExpression, Exchange, ExpressionCompiler } from 'switchyard/sdk';
import { compileRules, decide } from './rules.ts';
import type { RuleConfig } from './rules.ts';

// A stand-in compiler: the "expression" names its outcome (`true`, `false`, `error`, `string`).
const compiler: ExpressionCompiler = {
  compile(source): CompiledExpression {
    return {
      source,
      evaluate: () => {
        if (source === 'error') throw new Error('boom');
        if (source === 'string') return 'true';
        return source === 'true';
      },
    };
  },
};
const fail = (message: string): never => {
  throw new Error(message);
};
const ex = {} as Exchange;
const allowed = (rules: RuleConfig[]): boolean => decide(compileRules(rules, compiler, fail), ex);

describe('authorization decision (DECIDED 3, BEHAVIOUR.md §5.5)', () => {
  it('no rules allow', () => assert.equal(allowed([]), true));
  it('allow rules are OR-ed', () => {
    assert.equal(allowed(['false', 'true']), true);
    assert.equal(allowed(['false', 'false']), false);
  });
  it('errors and non-booleans count as false', () => {
    assert.equal(allowed(['error']), false);
    assert.equal(allowed(['string']), false);
    assert.equal(allowed(['error', 'true']), true);
    assert.equal(allowed([{ allow: 'true' }, { deny: 'error' }]), true, 'a failing deny does not deny');
    assert.equal(allowed([{ require: 'error' }]), false, 'a failing require denies');
  });
  it('deny vetoes, require must hold', () => {
    assert.equal(allowed(['true', { deny: 'true' }]), false);
    assert.equal(allowed(['true', { require: 'false' }]), false);
    assert.equal(allowed([{ require: 'true' }, { require: 'true' }]), true, 'only requires: they decide');
    assert.equal(allowed([{ deny: 'false' }]), true, 'only denies: a deny-list');
    assert.equal(allowed([{ require: 'true' }, 'false']), false, 'allow rules present: one must hold');
  });
  it('reports a rule whose checked type is not boolean', () => {
    const typed: ExpressionCompiler = { compile: (source) => ({ source, type: 'string', evaluate: () => '' }) as CompiledExpression };
    assert.throws(() => compileRules(['request.path'], typed, fail), /must be a boolean expression/);
  });
});
