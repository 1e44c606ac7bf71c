import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { CounterDelta, KeyStore } from '../../lib/key-store/types.ts';
import { KeyNumbers, SLOTS_MAX } from './key-numbers.ts';
import type { NumberedKey } from './key-numbers.ts';

function numbers(): { n: KeyNumbers; settled: CounterDelta[][]; spent: Map<string, number>; teams: Map<string, number> } {
  const n = new KeyNumbers();
  const settled: CounterDelta[][] = [];
  const spent = new Map<string, number>();
  const teams = new Map<string, number>();
  // The memos are the store's to fill: left out of what the tests compare.
  n.store = { settle: (d: readonly CounterDelta[]) => void settled.push(d.map(({ memo: _, ...rest }) => rest)) } as unknown as KeyStore;
  n.seriesOf = (id) => ({ inc: (by = 1) => void spent.set(id, (spent.get(id) ?? 0) + by) });
  n.teamSeriesOf = (team) => ({ inc: (by = 1) => void teams.set(team, (teams.get(team) ?? 0) + by) });
  return { n, settled, spent, teams };
}

const key = (id: string, tokens = true, usd = true, team?: string): NumberedKey => ({
  id,
  team,
  lifetimeTokens: tokens ? `k:${id}:tokens:total:all` : undefined,
  lifetimeUsd: usd ? `k:${id}:usd:total:all` : undefined,
  slot: 0,
  slotGeneration: 0,
});

test('key numbers (ADR 0177): answers are summed per key in place and handed to the store as lazy settlements, costs to the series', () => {
  const { n, settled, spent, teams } = numbers();
  const a = key('a', true, true, 'red');
  const b = key('b', false, true);
  n.addLifetime(a, 10, 0.5);
  n.addLifetime(a, 5, 0.25);
  n.addSpend(a, 0.75);
  n.addLifetime(b, 7, 1);
  n.addSpend(b, -1);
  n.addSpend(b, Infinity);
  assert.deepEqual(settled, [], 'nothing is written per answer');
  assert.notEqual(a.slot, b.slot);
  n.flush();
  assert.deepEqual(settled, [[
    { counter: 'k:a:tokens:total:all', amount: 15, expiresAt: 0, lazy: true, summed: true },
    { counter: 'k:a:usd:total:all', amount: 0.75, expiresAt: 0, lazy: true, summed: true },
    { counter: 'k:b:usd:total:all', amount: 1, expiresAt: 0, lazy: true, summed: true },
  ]], 'a total budget that stands for a lifetime counter (b\'s tokens) is not settled twice');
  assert.deepEqual([...spent], [['a', 0.75]], 'a negative or infinite cost is not counted');
  assert.deepEqual([...teams], [['red', 0.75]]);
  n.addSpend(key('c'), 0.5);
  n.addSpend(a, 0.25);
  n.flush();
  assert.deepEqual([...teams], [['red', 1], ['none', 0.5]], 'a key without a team counts under `none`');
  n.flush();
  assert.equal(settled.length, 1, 'a second flush has nothing to hand on');
  n.addLifetime(a, 1, 0);
  n.flush();
  assert.deepEqual(settled[1], [{ counter: 'k:a:tokens:total:all', amount: 1, expiresAt: 0, lazy: true, summed: true }]);
});

test('a key whose plan changes hands on what waits to the counters it was for; another state of the same key finds its slot', () => {
  const { n, settled, teams } = numbers();
  const before = key('a', true, true, 'red');
  n.addSpend(before, 1);
  n.addLifetime(before, 3, 0.1);
  const after = key('a', false, true, 'blue');
  n.addLifetime(after, 4, 0.2);
  n.addSpend(after, 2);
  assert.equal(after.slot, before.slot);
  assert.deepEqual(settled, [[
    { counter: 'k:a:tokens:total:all', amount: 3, expiresAt: 0, lazy: true, summed: true },
    { counter: 'k:a:usd:total:all', amount: 0.1, expiresAt: 0, lazy: true, summed: true },
  ]]);
  n.flush();
  assert.deepEqual(settled[1], [{ counter: 'k:a:usd:total:all', amount: 0.2, expiresAt: 0, lazy: true, summed: true }]);
  assert.deepEqual([...teams], [['red', 1], ['blue', 2]], 'a cost counts for the team the key had when it was spent');
});

test('a key whose plan or team changed hands on its own sums only: the other keys\' wait for their flush', () => {
  const { n, settled, spent } = numbers();
  const a = key('a', true, true, 'red');
  const b = key('b');
  n.addLifetime(a, 3, 0.1);
  n.addSpend(a, 1);
  n.addLifetime(b, 7, 0.2);
  n.addSpend(b, 2);
  n.addLifetime(key('a', false, true, 'blue'), 4, 0.3);
  assert.deepEqual(settled, [[
    { counter: 'k:a:tokens:total:all', amount: 3, expiresAt: 0, lazy: true, summed: true },
    { counter: 'k:a:usd:total:all', amount: 0.1, expiresAt: 0, lazy: true, summed: true },
  ]]);
  assert.deepEqual([...spent], [['a', 1]], 'b\'s cost waits for `/metrics`');
  n.flush();
  assert.deepEqual(settled[1], [
    { counter: 'k:a:usd:total:all', amount: 0.3, expiresAt: 0, lazy: true, summed: true },
    { counter: 'k:b:tokens:total:all', amount: 7, expiresAt: 0, lazy: true, summed: true },
    { counter: 'k:b:usd:total:all', amount: 0.2, expiresAt: 0, lazy: true, summed: true },
  ]);
  assert.deepEqual([...spent], [['a', 1], ['b', 2]]);
});

test('a key\'s first cost counts when its slot grows the numbers\' array', () => {
  const { n, spent } = numbers();
  for (let i = 0; i < 200; i++) n.addSpend(key(`k${i}`), 1);
  n.flush();
  assert.equal(spent.size, 200);
  assert.ok([...spent.values()].every((usd) => usd === 1));
});

test('past SLOTS_MAX keys every sum is handed on and slots are given again (bounded)', () => {
  const { n, settled } = numbers();
  const first = key('k0');
  n.addLifetime(first, 1, 0);
  for (let i = 1; i < SLOTS_MAX; i++) n.addSpend(key(`k${i}`), 1);
  const generation = n.generation;
  n.addLifetime(key('one-more'), 2, 0);
  assert.equal(n.generation, generation + 1);
  assert.deepEqual(settled[0]![0], { counter: 'k:k0:tokens:total:all', amount: 1, expiresAt: 0, lazy: true, summed: true });
  n.addLifetime(first, 5, 0);
  assert.equal(first.slotGeneration, n.generation, 'a state of an older generation is given a new slot');
  n.flush();
  assert.deepEqual(settled[1], [
    { counter: 'k:one-more:tokens:total:all', amount: 2, expiresAt: 0, lazy: true, summed: true },
    { counter: 'k:k0:tokens:total:all', amount: 5, expiresAt: 0, lazy: true, summed: true },
  ]);
});
