// The lease book's rules (ADR 0108), without a store: what a lease may hold, what draws and settlements do to its
// room, and when the room goes back (redis-leases.test.ts: the Redis store with them, against a real redis-server).
import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import { LEASE_REQUESTS, LEASE_SHARE, LeaseBook, LeasedCounter } from './counter-leases.ts';

const book = (options = {}) => {
  const given: [string, number][] = [];
  return { given, leases: new LeaseBook<LeasedCounter>((c, amount) => given.push([c.counter, amount]), options) };
};
const line = (limit: number, amount: number) => ({ counter: 't', limit, amount, expiresAt: 5 });

test('lease book: a lease holds LEASE_REQUESTS amounts, at most LEASE_SHARE of the limit, and only when that is two amounts or more', () => {
  const { leases } = book();
  const c = new LeasedCounter('t');
  assert.equal(leases.sizeFor(c, line(1e9, 2), 0), LEASE_REQUESTS * 2);
  assert.equal(leases.sizeFor(c, line(10_000, 2), 0), 10_000 * LEASE_SHARE, 'capped by the share of the limit');
  assert.equal(leases.sizeFor(c, line(3_999, 2), 0), 0, 'a lease of less than two requests is not taken: small budgets stay exact');
  assert.equal(leases.sizeFor(c, line(1e9, 0), 0), 0, 'nothing to lease for a zero amount');
  assert.equal(leases.sizeFor(c, line(Infinity, 2), 0), 0);
  c.leasing = true;
  assert.equal(leases.sizeFor(c, line(1e9, 2), 0), 0, 'one lease line in flight per counter');
  leases.refused(c, 100);
  assert.equal(c.leasing, false);
  assert.equal(leases.sizeFor(c, line(1e9, 2), 5_000), 0, 'not leased for a while after a lease line was refused');
  assert.equal(leases.sizeFor(c, line(1e9, 2), 10_100), 32);
  assert.equal(book({ requests: 0 }).leases.sizeFor(new LeasedCounter('t'), line(1e9, 2), 0), 0, 'leases off');
});

test('lease book: draws take from the room under the limit it was leased with; settlements go to the room, a charge past it to the store; closing gives the room back', () => {
  const { leases, given } = book();
  const c = new LeasedCounter('t');
  assert.equal(leases.draw(c, line(100, 1), 0), false, 'no lease yet');
  leases.granted(c, line(100, 1), 4, 10);
  assert.equal(c.pinned, true, 'the settlement queue keeps a leased state');
  assert.equal(leases.size, 1);
  for (let i = 0; i < 4; i++) assert.equal(leases.draw(c, line(100, 1), 11), true);
  assert.equal(leases.draw(c, line(100, 1), 11), false, 'room used up');
  assert.equal(leases.settle(c, -0.5), true, 'a refund adds to the room');
  assert.equal(c.room, 0.5);
  leases.undraw(c, 1);
  assert.equal(c.room, 1.5, 'a reservation that took nothing gives its draw back');
  assert.equal(leases.settle(c, 2), true);
  assert.deepEqual(given, [['t', 0.5]], 'a charge past the room goes to the store');
  assert.equal(c.room, 0);
  leases.granted(c, line(100, 1), 4, 12);
  assert.equal(leases.draw(c, line(200, 1), 12), false, 'another limit closes the lease');
  assert.deepEqual(given.at(-1), ['t', -4], 'its room given back as a refund');
  assert.equal(c.leased, false);
  assert.equal(c.pinned, false);
  assert.equal(leases.settle(c, -1), false, 'no lease: the caller queues the settlement');
  leases.undraw(c, 1);
  assert.deepEqual(given.at(-1), ['t', -1], 'a draw undone after its lease closed goes to the store');
});

test('lease book: room not drawn from for idleMs goes back; closeAll gives every room back', async () => {
  const { leases, given } = book({ idleMs: 30 });
  const a = new LeasedCounter('a');
  const b = new LeasedCounter('b');
  leases.granted(a, line(100, 1), 4, Date.now());
  leases.granted(b, line(100, 1), 4, Date.now());
  leases.sweep(Date.now());
  assert.equal(leases.size, 2, 'drawn from lately');
  const until = Date.now() + 2_000;
  while (leases.size > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
  assert.equal(leases.size, 0, 'the timer returned both');
  assert.deepEqual(given.sort(), [['a', -4], ['b', -4]]);
  leases.granted(a, line(100, 1), 3, Date.now());
  leases.granted(a, line(100, 1), 3, Date.now());
  leases.closeAll();
  assert.deepEqual(given.at(-1), ['a', -6], 'two lease lines add to one room');
  assert.equal(leases.size, 0);
});
