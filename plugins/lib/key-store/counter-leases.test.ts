// The lease book's rules (ADR 0108), without a store: what a lease may hold, what draws and settlements do to its
// room, and when the room goes back (redis-leases.test.ts: the Redis store with them, against a real redis-server).
import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import { DRAWN, LEASE_REFUSED, LEASE_REQUESTS, LEASE_RETRY_MS, LEASE_SHARE, LeaseBook, LeasedCounter, NOTHING_TAKEN } from './counter-leases.ts';
import type { LeasedLine } from './counter-leases.ts';
import { KEY_GONE } from './types.ts';

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

/**
 * A reservation of four lines on counters a–d: a drawn from its room, b sent as it is, c drawn, d sent leasing 8. The
 * script is sent b and d only (sent indices 0 and 1); `leased` is the Redis store's list, the arrays the SQLite store's.
 */
const reservation = () => {
  const { leases, given } = book();
  const [a, b, c, d] = ['a', 'b', 'c', 'd'].map((n) => new LeasedCounter(n)) as [LeasedCounter, LeasedCounter, LeasedCounter, LeasedCounter];
  const lines = [a, b, c, d].map((x) => ({ counter: x.counter, limit: 100, amount: 1, expiresAt: 5 }));
  for (const x of [a, c]) {
    leases.granted(x, lines[0]!, 4, 0);
    assert.equal(leases.draw(x, lines[0]!, 1), true);
  }
  d.leasing = true;
  const leased: LeasedLine<LeasedCounter>[] = [
    { c: a, line: 0, size: DRAWN },
    { c, line: 2, size: DRAWN },
    { c: d, line: 3, size: 8 },
  ];
  return { leases, given, a, b, c, d, lines, leased, states: [a, b, c, d], sizes: [DRAWN, 0, DRAWN, 8] };
};

test("lease answer: taken, a lease line's room is the replica's and drawn amounts stay drawn", () => {
  for (const layout of ['list', 'arrays'] as const) {
    const r = reservation();
    const answer = layout === 'list' ? r.leases.answer(r.leased, r.lines, -1, 50) : r.leases.answerLines(r.states, r.sizes, r.lines, -1, 50);
    assert.equal(answer, -1, layout);
    assert.equal(r.d.leased, true, layout);
    assert.equal(r.d.room, 8, layout);
    assert.equal(r.d.leasing, false, layout);
    assert.equal(r.d.lastDraw, 50, layout);
    assert.equal(r.a.room, 3, `${layout}: the draw from a is not given back`);
    assert.equal(r.c.room, 3, layout);
    assert.equal(r.b.leased, false, `${layout}: a plain line leases nothing`);
  }
});

test('lease answer: a refusal by the line after a drawn one maps to its index in the reservation, and every draw goes back', () => {
  const r = reservation();
  // Sent index 0 is b: line 1 of the reservation (a, drawn, is not sent).
  assert.equal(r.leases.answer(r.leased, r.lines, 0, 50), 1);
  assert.equal(r.a.room, 4, 'a draw before the refusing line goes back');
  assert.equal(r.c.room, 4, 'so does one after it');
  assert.equal(r.d.leasing, false, 'the lease line was not taken');
  assert.equal(r.d.leased, false);
  assert.equal(r.d.noLeaseUntil, 0, 'and may lease again at once: it did not refuse');
  const s = reservation();
  assert.equal(s.leases.answerLines(s.states, s.sizes, s.lines, 1, 50), 1, "the arrays are in the reservation's terms already");
  assert.deepEqual([s.a.room, s.c.room, s.d.leasing, s.d.noLeaseUntil], [4, 4, false, 0]);
});

test('lease answer: a refused lease line (past two drawn lines) gives LEASE_REFUSED and is not leased for LEASE_RETRY_MS', () => {
  const r = reservation();
  // Sent index 1 is d: line 3 (a and c, drawn, before it).
  assert.equal(r.leases.answer(r.leased, r.lines, 1, 50), LEASE_REFUSED);
  assert.equal(r.d.noLeaseUntil, 50 + LEASE_RETRY_MS);
  assert.equal(r.d.leasing, false);
  assert.equal(r.leases.sizeFor(r.d, r.lines[3]!, 51), 0, 'sent again without the lease');
  assert.deepEqual([r.a.room, r.c.room], [4, 4], 'draws undone: the reservation goes again whole');
  const s = reservation();
  assert.equal(s.leases.answerLines(s.states, s.sizes, s.lines, 3, 50), LEASE_REFUSED);
  assert.deepEqual([s.d.noLeaseUntil, s.a.room, s.c.room], [50 + LEASE_RETRY_MS, 4, 4]);
});

test('lease answer: nothing taken (key gone, version changed, the store failed): draws go back, lease lines are not taken, the answer stays', () => {
  for (const refused of [KEY_GONE, -3, NOTHING_TAKEN]) {
    const r = reservation();
    assert.equal(r.leases.answer(r.leased, r.lines, refused, 50), refused);
    assert.deepEqual([r.a.room, r.c.room, r.d.leasing, r.d.leased, r.d.noLeaseUntil], [4, 4, false, false, 0], String(refused));
    const s = reservation();
    assert.equal(s.leases.answerLines(s.states, s.sizes, s.lines, refused, 50), refused);
    assert.deepEqual([s.a.room, s.c.room, s.d.leasing, s.d.leased, s.d.noLeaseUntil], [4, 4, false, false, 0], String(refused));
  }
  // A draw undone after its lease closed goes to the store.
  const r = reservation();
  r.leases.close(r.a);
  r.leases.answer(r.leased, r.lines, KEY_GONE, 50);
  assert.deepEqual(r.given.at(-1), ['a', -1]);
});

test('lease book (ADR 0187): a closed lease gives its row of numbers up; the lease opened in it starts from nothing and the closed counter reads none', () => {
  const { leases, given } = book();
  const a = new LeasedCounter('a');
  const b = new LeasedCounter('b');
  leases.granted(a, line(100, 1), 4, 10);
  const row = a.leaseRow;
  leases.close(a);
  assert.deepEqual(given, [['a', -4]]);
  leases.granted(b, line(200, 1), 3, 20);
  assert.equal(b.leaseRow, row, 'the row was given again');
  assert.deepEqual([b.room, b.leaseLimit, b.lastDraw], [3, 200, 20]);
  assert.deepEqual([a.leased, a.room, a.leaseLimit], [false, 0, 0], 'the closed lease reads nothing of b');
  assert.equal(leases.settle(a, -1), false, 'and takes nothing into it');
  assert.equal(leases.draw(a, line(200, 1), 21), false);
  assert.equal(b.room, 3);
  for (let i = 0; i < 40; i++) leases.granted(new LeasedCounter(`c${i}`), line(100, 1), i + 1, 30);
  assert.deepEqual([b.room, b.leaseLimit], [3, 200], 'rows grown past the first ones keep what they held');
});
