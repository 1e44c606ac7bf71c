// The keys' numbers and `/metrics` (ADR 0177): a scrape hands the costs waiting to the series, once, and leaves the
// lifetime sums to their FLUSH_MS timer; the numbers kept with the store across reloads keep the first load's logger.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { CompileContext, Logger } from 'switchyard/sdk';
import { MetricsRegistry } from '../../kernel/telemetry/metrics.ts';
import type { CounterDelta } from '../../plugins/lib/key-store/types.ts';
import type { NumberedKey } from '../../plugins/policies/virtual-keys/key-numbers.ts';
import type { KeyNumbers } from '../../plugins/policies/virtual-keys/key-numbers.ts';
import { compileVirtualKeys } from '../../plugins/policies/virtual-keys/virtual-keys.ts';

type Handle = { numbers: KeyNumbers; close(): Promise<void> };

/** A compile's context: `resources` and `registry` are the gateway's, kept across loads; the load's state is new. */
function context(registry: MetricsRegistry, resources: Map<string, unknown>, logger: Logger): CompileContext {
  const states = new Map<string, unknown>();
  return {
    cwd: process.cwd(),
    checkOnly: false,
    sharedEvents: { others: false },
    logger,
    warn: () => undefined,
    fail: (message: string) => {
      throw new Error(message);
    },
    resources: { get: <T>(key: string, create: () => T): T => (resources.has(key) ? resources.get(key) : (resources.set(key, create()), resources.get(key))) as T },
    counter: (name: string, help: string) => registry.counter(name, help),
    loadState: <T>(key: string, create: () => T): T => (states.has(key) ? states.get(key) : (states.set(key, create()), states.get(key))) as T,
  } as unknown as CompileContext;
}

function logger(errors: string[]): Logger {
  const log: Logger = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: (m) => void errors.push(m), child: () => log, isEnabled: () => true };
  return log;
}

const config = { store: { sqlite: { path: ':memory:' } } };
const ivy = (): NumberedKey => ({ id: 'ivy', team: undefined, lifetimeTokens: 'k:ivy:tokens:total:all', lifetimeUsd: 'k:ivy:usd:total:all', slot: 0, slotGeneration: 0 });
const handleOf = (resources: Map<string, unknown>): Handle => [...resources.values()][0] as Handle;

test('a `/metrics` scrape hands the keys\' costs on once and sends no lifetime sums to the store', async () => {
  const registry = new MetricsRegistry();
  const resources = new Map<string, unknown>();
  await compileVirtualKeys(config, context(registry, resources, logger([])));
  const handle = handleOf(resources);
  const settled: CounterDelta[][] = [];
  handle.numbers.store!.settle = (d: readonly CounterDelta[]) => void settled.push([...d]);
  const key = ivy();
  handle.numbers.addLifetime(key, 16, 0.25);
  handle.numbers.addSpend(key, 0.25);
  const hooks = ['switchyard_virtual_key_spend_usd_total', 'switchyard_virtual_key_cost_usd_total'].map((name) => registry.counter(name, '').scrapeHooks.length);
  assert.equal(hooks[0]! + hooks[1]!, 1, 'one hook for the two series');
  const text = registry.render();
  assert.match(text, /^switchyard_virtual_key_cost_usd_total\{key="ivy"\} 0\.25$/m);
  assert.match(text, /^switchyard_virtual_key_spend_usd_total\{team="none"\} 0\.25$/m);
  assert.deepEqual(settled, [], 'the lifetime sums wait for their timer');
  await handle.close();
  assert.equal(settled.length, 1, 'and go at the close');
});

test('a later load (a staged reload, an admin UI paste) does not re-point the kept numbers at its logger', async () => {
  const registry = new MetricsRegistry();
  const resources = new Map<string, unknown>();
  const live: string[] = [];
  const later: string[] = [];
  await compileVirtualKeys(config, context(registry, resources, logger(live)));
  await compileVirtualKeys(config, context(registry, resources, logger(later)));
  const handle = handleOf(resources);
  handle.numbers.store!.settle = () => {
    throw new Error('store down');
  };
  handle.numbers.addLifetime(ivy(), 16, 0.25);
  handle.numbers.flush();
  assert.deepEqual([live, later], [['virtual key lifetime settlement failed'], []]);
  handle.numbers.store!.settle = () => undefined;
  await handle.close();
});
