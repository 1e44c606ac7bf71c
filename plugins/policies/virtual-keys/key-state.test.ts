import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { KeyRecord } from '../../lib/key-store/types.ts';
import { keyStateOf } from './key-state.ts';
import type { KeyDirectory } from './virtual-keys.ts';

const series: string[] = [];
function directory(): KeyDirectory {
  return {
    store: undefined as never,
    declared: new Map(),
    declaredById: new Map(),
    teams: new Map([['red', [{ unit: 'usd', limit: 5, period: 'day' }]]]),
    shared: [{ unit: 'tokens', limit: 100, period: 'month' }],
    outputEstimate: 256,
    metrics: { teamSpend: (t) => (series.push(`team ${t}`), { inc: () => undefined }), keySpend: (k) => (series.push(`key ${k}`), { inc: () => undefined }), denied: () => undefined },
    states: new WeakMap(),
  };
}

const record: KeyRecord = {
  id: 'vk_1',
  team: 'red',
  budgets: [{ unit: 'usd', limit: 10, period: 'day' }, { unit: 'usd', limit: 3, period: 'day' }, { unit: 'tokens', limit: 1000, period: 'total' }],
  prefix: 'sk',
  createdAt: '',
  source: 'api',
};

test('key state (ADR 0100): one per record and directory, made once; the plan merges budgets of one counter and knows the lifetime counter it owns', () => {
  const dir = directory();
  const state = keyStateOf(dir, record);
  assert.equal(keyStateOf(dir, record), state, 'the same record finds the same state');
  assert.notEqual(keyStateOf(directory(), record), state, 'another config load (directory) has its own');
  assert.notEqual(keyStateOf(dir, { ...record }), state, 'another record (re-read after a change) gets a new state');
  assert.deepEqual(state.attribute, { id: 'vk_1', name: '', owner: '', team: 'red', models: [], metadata: {} });
  assert.ok(Object.isFrozen(state.attribute));
  assert.deepEqual(state.teamBudgets, [{ unit: 'usd', limit: 5, period: 'day' }]);
  assert.deepEqual(
    state.plan.slots.map((s) => [s.scope, s.budget.unit, s.budget.period, s.budget.limit]),
    [['k:vk_1', 'usd', 'day', 3], ['k:vk_1', 'tokens', 'total', 1000], ['t:red', 'usd', 'day', 5], ['g', 'tokens', 'month', 100]],
    'two key budgets of one unit and period share a counter, at the lower limit',
  );
  assert.equal(state.plan.lifetimeTokens, true, 'the key has a total tokens budget: that counter is its lifetime tokens');
  assert.equal(state.plan.lifetimeUsd, false);
  assert.deepEqual(state.lifetime, { tokens: 'k:vk_1:tokens:total:all', usd: 'k:vk_1:usd:total:all' });
  assert.equal(state.keySpend, undefined, 'series are resolved at the first priced answer, not at admission');
  assert.deepEqual(series, []);
});
