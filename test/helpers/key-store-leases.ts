// What budget leases (ADR 0108) must do on every store that takes them (Redis, SQLite), against the real store:
// `open(prefix, options)` opens a leasing store (one namespace per prefix; two opens of one prefix are two replicas
// or processes), and `raw(store)` reads a counter as stored (through another store instance: what other replicas see).
import { strict as assert } from 'node:assert';
import { LEASE_REQUESTS } from '../../plugins/lib/key-store/counter-leases.ts';
import type { LeaseOptions } from '../../plugins/lib/key-store/counter-leases.ts';
import { digestOf } from '../../plugins/lib/key-store/secrets.ts';
import { KEY_GONE } from '../../plugins/lib/key-store/types.ts';
import type { CounterLine, KeyStore } from '../../plugins/lib/key-store/types.ts';

export type OpenLeasing = (name: string, options?: LeaseOptions) => Promise<KeyStore>;

async function withStores(open: OpenLeasing, name: string, options: LeaseOptions | undefined, check: (a: KeyStore, b: KeyStore) => Promise<void>): Promise<void> {
  const a = await open(name, options);
  const b = await open(name, options);
  try {
    await check(a, b);
  } finally {
    await a.close();
    await b.close();
  }
}

/**
 * A counter far from its limit is leased: stored as the request plus LEASE_REQUESTS of its amount, then unchanged for
 * the next LEASE_REQUESTS reservations (drawn from the room), refunds kept in the room; a read of usage through the
 * leasing store gives the room back first and is exact, while another store saw the room as used.
 */
export function checkLeaseDraws(open: OpenLeasing): Promise<void> {
  return withStores(open, 'draws', undefined, async (store, other) => {
    const team: CounterLine = { counter: 't:a:usd', limit: 1e6, amount: 2, expiresAt: Date.now() + 3_600_000 };
    const raw = async (): Promise<number> => (await other.values([team.counter]))[0]!;
    assert.equal(await store.reserve([team]), -1);
    assert.equal(await raw(), 2 + LEASE_REQUESTS * 2, 'the request and its lease, in one checked line');
    let spent = 2;
    for (let i = 0; i < LEASE_REQUESTS; i++) {
      assert.equal(await store.reserve([team]), -1);
      // Each answer costs less than its estimate (a refund of 0.5), which goes to the room.
      await store.settle([{ counter: team.counter, amount: -0.5, expiresAt: team.expiresAt }]);
      spent += 1.5;
    }
    assert.equal(await raw(), 2 + LEASE_REQUESTS * 2, `${LEASE_REQUESTS} more reservations and their refunds wrote nothing`);
    for (let i = 0; i < LEASE_REQUESTS; i++) {
      assert.equal(await store.reserve([team]), -1);
      spent += 2;
    }
    assert.ok((await raw()) > spent, 'another replica sees the room this one holds as used');
    assert.deepEqual(await store.values([team.counter]), [spent], "a read of usage gives the replica's room back first: exact");
    assert.equal(await raw(), spent);
  });
}

/** Near its limit a lease line is refused and the reservation goes again without it: the budget stops exactly at it. */
export function checkLeaseNearLimit(open: OpenLeasing): Promise<void> {
  return withStores(open, 'near', { share: 1 }, async (store) => {
    const line: CounterLine = { counter: 'k:near', limit: 40, amount: 1, expiresAt: 0 };
    const answers: number[] = [];
    for (let i = 0; i < 45; i++) answers.push(await store.reserve([line]));
    assert.deepEqual(answers, [...Array<number>(40).fill(-1), ...Array<number>(5).fill(0)], 'exactly limit / amount pass');
    assert.deepEqual(await store.values([line.counter]), [40]);
  });
}

/** Two replicas leasing one budget at once never pass its limit; every amount is in the store once the rooms are back. */
export function checkLeasesTogether(open: OpenLeasing): Promise<void> {
  return withStores(open, 'two', { share: 1 }, async (a, b) => {
    const line: CounterLine = { counter: 't:two', limit: 200, amount: 1, expiresAt: 0 };
    const burst = (s: KeyStore) => Promise.all(Array.from({ length: 150 }, () => s.reserve([line])));
    const [ra, rb] = await Promise.all([burst(a), burst(b)]);
    const admitted = [...ra, ...rb].filter((r) => r === -1).length;
    assert.ok(admitted <= 200 && admitted >= 150, `admitted ${admitted} of 300 against a limit of 200`);
    await a.values([line.counter]);
    assert.deepEqual(await b.values([line.counter]), [admitted], 'both rooms given back: the store holds what was admitted');
    let more = 0;
    while ((await a.reserve([line])) === -1) more++;
    assert.equal(admitted + more, 200, 'the rest of the budget is still there to spend');
  });
}

/** A reservation refused by another line, or whose key is gone, gives its draws back and answers its own line index. */
export function checkLeaseRefusals(open: OpenLeasing): Promise<void> {
  return withStores(open, 'mix', undefined, async (store, other) => {
    const team: CounterLine = { counter: 't:mix', limit: 1e6, amount: 1, expiresAt: 0 };
    const key: CounterLine = { counter: 'k:mix', limit: 3, amount: 1, expiresAt: 0 };
    const answers: number[] = [];
    for (let i = 0; i < 5; i++) answers.push(await store.reserve([team, key]));
    assert.deepEqual(answers, [-1, -1, -1, 1, 1], "the key's own budget refuses: line 1 of the request (its team line was drawn, not sent)");
    await other.create({ id: 'gone', budgets: [], prefix: 'sk-…', createdAt: new Date(0).toISOString(), source: 'api' }, digestOf('gone'));
    assert.ok(await store.find(digestOf('gone')));
    assert.equal(await store.reserve([team], digestOf('gone')), -1);
    await other.revoke('gone', new Date().toISOString());
    assert.equal(await store.reserve([team], digestOf('gone')), KEY_GONE);
    assert.deepEqual(await store.values([team.counter, key.counter]), [4, 3], 'the refused and the gone reservations took nothing');
  });
}
