import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Budget, KeyRecord } from '../../lib/key-store/types.ts';
import { KeyNumbers } from './key-numbers.ts';
import { keyStateOf, sharedSlotLists, STATES_MAX } from './key-state.ts';
import type { KeyDirectory } from './virtual-keys.ts';

const series: string[] = [];
const teams = new Map<string, readonly Budget[]>([['red', [{ unit: 'usd', limit: 5, period: 'day' }]]]);
const shared: readonly Budget[] = [{ unit: 'tokens', limit: 100, period: 'month' }];
function directory(): KeyDirectory {
  return {
    store: undefined as never,
    declared: new Map(),
    declaredById: new Map(),
    teams,
    shared,
    outputEstimate: 256,
    metrics: { teamSpend: (t) => (series.push(`team ${t}`), { inc: () => undefined }), keySpend: (k) => (series.push(`key ${k}`), { inc: () => undefined }), denied: () => undefined, beforeScrape: () => () => undefined },
    numbers: new KeyNumbers(),
    byDigest: new Map(),
    sharedSlots: sharedSlotLists(teams, shared),
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

test('key state (ADR 0100, 0112): one per digest and directory, made once; the slots merge budgets of one counter and the lifetime counter a total budget owns is not settled twice', () => {
  const dir = directory();
  const state = keyStateOf(dir, record, 'd1');
  assert.equal(keyStateOf(dir, record, 'd1'), state, 'the same record under the same digest finds the same state');
  assert.equal(dir.byDigest.get('d1'), state, 'kept by its digest');
  assert.equal(state.digest, 'd1');
  assert.notEqual(keyStateOf(directory(), record, 'd1'), state, 'another config load (directory) has its own');
  const changed = keyStateOf(dir, { ...record }, 'd1');
  assert.notEqual(changed, state, 'another record (re-read after a change) gets a new state');
  assert.equal(dir.byDigest.get('d1'), changed, 'and replaces the old one');
  const declared = keyStateOf(dir, record, 'd2', true);
  assert.equal(declared.digest, undefined, 'a declared key is kept by its digest but has none for the store to check');
  assert.equal(dir.byDigest.get('d2'), declared);
  assert.deepEqual([state.id, state.team, state.routes, state.models], [record.id, record.team, record.routes, record.models], 'the fields every request reads');
  assert.deepEqual(state.attribute, { id: 'vk_1', name: '', owner: '', team: 'red', models: [], metadata: {} });
  assert.ok(Object.isFrozen(state.attribute));
  assert.deepEqual(
    state.slots.map((s) => [s.scope, s.budget.unit, s.budget.period, s.budget.limit]),
    [['k:vk_1', 'usd', 'day', 3], ['k:vk_1', 'tokens', 'total', 1000], ['t:red', 'usd', 'day', 5], ['g', 'tokens', 'month', 100]],
    'two key budgets of one unit and period share a counter, at the lower limit',
  );
  assert.equal(state.lifetimeTokens, undefined, 'the key has a total tokens budget: that counter is its lifetime tokens');
  assert.equal(state.lifetimeUsd, 'k:vk_1:usd:total:all');
  assert.equal(state.slotGeneration, 0, 'a slot among the numbers is given at the first answer, not at admission');
  assert.deepEqual(series, []);
});

test('a team\'s and the organisation\'s slots are shared by the keys that take from them (ADR 0113): one per counter, not one per key', () => {
  const dir = directory();
  const bare = (id: string, team?: string): KeyRecord => ({ id, team, budgets: [], prefix: 'sk', createdAt: '', source: 'api' });
  const a = keyStateOf(dir, bare('vk_a', 'red'), 'da');
  const b = keyStateOf(dir, bare('vk_b', 'red'), 'db');
  assert.equal(a.slots, b.slots, 'two keys of a team without budgets of their own reserve from one list');
  assert.deepEqual(a.slots.map((s) => [s.scope, s.who]), [['t:red', 'team `red`'], ['g', 'the organisation (all keys)']]);
  const own = keyStateOf(dir, record, 'dr');
  assert.deepEqual(own.slots.map((s) => s.scope), ['k:vk_1', 'k:vk_1', 't:red', 'g']);
  assert.equal(own.slots[2], a.slots[0], 'a key with budgets of its own has its own slots first, then its team\'s shared ones');
  assert.equal(own.slots[3], a.slots[1]);
  const lone = keyStateOf(dir, bare('vk_c', 'blue'), 'dc');
  const none = keyStateOf(dir, bare('vk_d'), 'dd');
  assert.equal(lone.slots, none.slots, 'a team not declared has no budgets: such keys share the organisation\'s list');
  assert.deepEqual(none.slots.map((s) => s.scope), ['g']);
  assert.equal(none.slots[0], a.slots[1], 'the organisation\'s counter has one slot');
  assert.deepEqual([...dir.sharedSlots.keys()].sort(), ['', 'red'], 'one list per declared team (bounded by the config), one for the rest');
});

test('key states are bounded: the map is emptied when it holds STATES_MAX', () => {
  const dir = directory();
  for (let i = 0; i < STATES_MAX; i++) keyStateOf(dir, { ...record, id: `vk_${i}` }, `d${i}`);
  assert.equal(dir.byDigest.size, STATES_MAX);
  keyStateOf(dir, record, 'one more');
  assert.equal(dir.byDigest.size, 1);
});
