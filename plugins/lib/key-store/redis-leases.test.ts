// Budget leases on the Redis store (ADR 0108), against a real redis-server: a counter far from its limit is written
// about once per LEASE_REQUESTS of its reservations; every amount ends in the store exactly once the leases are given
// back; a lease line near the limit is refused and the reservation sent again without it, so the budget still stops
// exactly at its limit; replicas leasing together never pass it; a refusal by another line, or a key gone, gives the
// drawn amounts back and answers the request's own line index.
import { strict as assert } from 'node:assert';
import { after, before, test } from 'node:test';
import { redisSkip, startRedis } from '../../../test/helpers/redis.ts';
import type { RunningRedis } from '../../../test/helpers/redis.ts';
import { checkLeaseDraws, checkLeaseNearLimit, checkLeaseRefusals, checkLeasesTogether } from '../../../test/helpers/key-store-leases.ts';
import { LEASE_REQUESTS } from './counter-leases.ts';
import type { LeaseOptions } from './counter-leases.ts';
import { KEY_RECHECK_MS } from './keys-version-cache.ts';
import { openStore } from './open-store.ts';
import { RedisKeyStore } from './redis-store.ts';
import { RespClient } from './resp.ts';
import { REFUND_HOLD_MS } from './settlement-queue.ts';
import type { CounterLine } from './types.ts';

const skip = redisSkip;
let redis: RunningRedis | undefined;
let raw: RespClient;
before(async () => {
  if (skip) return;
  redis = await startRedis();
  raw = new RespClient(redis.url);
});
after(async () => {
  raw?.close();
  await redis?.stop();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const stored = async (key: string): Promise<number> => Number((await raw.command('GET', key)) ?? 0);
/** The writes Redis ran so far (SETs, from inside the scripts included). */
const sets = async (): Promise<number> => Number(/cmdstat_set:calls=(\d+)/.exec(String(await raw.command('INFO', 'commandstats')))?.[1] ?? 0);

test('redis store (ADR 0108): a counter far from its limit is leased: written once per LEASE_REQUESTS reservations, refunds kept in the room, every amount in the store once the room is given back', { skip }, async () => {
  const store = await RedisKeyStore.open(redis!.url, 'lease:');
  const other = await RedisKeyStore.open(redis!.url, 'lease:');
  try {
    const team: CounterLine = { counter: 't:a:usd', limit: 1e6, amount: 2, expiresAt: Date.now() + 3_600_000 };
    const setsBefore = await sets();
    assert.equal(await store.reserve([team]), -1);
    assert.equal(await stored('lease:c:t:a:usd'), 2 + LEASE_REQUESTS * 2, 'the request and its lease, in one checked line');
    let spent = 2;
    for (let i = 0; i < 3 * LEASE_REQUESTS; i++) {
      assert.equal(await store.reserve([team]), -1);
      // Each answer costs less than its estimate (a refund of 0.5), which goes to the room.
      store.settle([{ counter: team.counter, amount: -0.5, expiresAt: team.expiresAt }]);
      spent += 1.5;
    }
    store.settle([{ counter: team.counter, amount: -0.5, expiresAt: team.expiresAt }]);
    spent -= 0.5;
    const writes = (await sets()) - setsBefore;
    assert.ok(writes <= 4, `${3 * LEASE_REQUESTS + 1} reservations and their refunds wrote the counter ${writes} times (${3 * LEASE_REQUESTS + 1} without leases)`);
    assert.ok((await other.values([team.counter]))[0]! > spent, 'another replica sees the room this one holds as used');
    assert.deepEqual(await store.values([team.counter]), [spent], "a read of usage gives the replica's room back first: exact");
    assert.equal(await stored('lease:c:t:a:usd'), spent);
  } finally {
    await store.close();
    await other.close();
  }
});

test('redis store (ADR 0108): room not drawn from for LEASE_IDLE_MS goes back by itself; a charge past the room is written within SETTLE_DELAY_MS', { skip }, async () => {
  const store = await RedisKeyStore.open(redis!.url, 'idle:', KEY_RECHECK_MS, { idleMs: 50 });
  try {
    const line: CounterLine = { counter: 'k:idle', limit: 1e6, amount: 1, expiresAt: 0 };
    const key = 'idle:c:k:idle';
    assert.equal(await store.reserve([line]), -1);
    assert.equal(await stored(key), 1 + LEASE_REQUESTS);
    store.settle([{ counter: line.counter, amount: LEASE_REQUESTS + 5, expiresAt: 0 }]);
    await sleep(60);
    assert.equal(await stored(key), 1 + LEASE_REQUESTS + 5, 'the room paid the charge, the rest was written');
    assert.equal(await store.reserve([line]), -1);
    assert.equal(await stored(key), 2 + 2 * LEASE_REQUESTS + 5, 'the room used up: a new lease');
    store.settle([{ counter: line.counter, amount: -3, expiresAt: 0 }]);
    const spent = 1 + LEASE_REQUESTS + 5 + 1 - 3;
    // Given back once idle, as a refund, which is held for REFUND_HOLD_MS at most (ADR 0097).
    const until = Date.now() + REFUND_HOLD_MS + 2_000;
    while ((await stored(key)) !== spent && Date.now() < until) await sleep(50);
    assert.equal(await stored(key), spent, 'its room back once idle: what was spent');
  } finally {
    await store.close();
  }
});

const leasing = (name: string, options: LeaseOptions = {}) => RedisKeyStore.open(redis!.url, `${name}:`, KEY_RECHECK_MS, options);
test('redis store (ADR 0108): the leasing scenarios of every store: draws, refunds and an exact read', { skip }, () => checkLeaseDraws(leasing));
test('redis store (ADR 0108): near its limit a lease line is refused and the reservation sent again without it: the budget stops exactly at its limit', { skip }, () => checkLeaseNearLimit(leasing));
test('redis store (ADR 0108): two replicas leasing one budget at once never pass its limit, and every amount is in the store once their room is back', { skip }, () => checkLeasesTogether(leasing));
test("redis store (ADR 0108): a reservation refused by another line, or whose key is gone, gives its drawn amounts back and answers the request's own line index", { skip }, () => checkLeaseRefusals(leasing));

test('redis store (ADR 0108): the config leases by default; `leases: false` writes every reservation', { skip }, async () => {
  const line: CounterLine = { counter: 't:cfg', limit: 1e6, amount: 1, expiresAt: 0 };
  for (const [prefix, leases, written] of [['cfg-on:', undefined, 1 + LEASE_REQUESTS], ['cfg-off:', false, 2]] as const) {
    const store = await openStore({ redis: { url: redis!.url, prefix, ...(leases === undefined ? {} : { leases }) } }, '.');
    try {
      for (let i = 0; i < 2; i++) assert.equal(await store.reserve([line]), -1);
      assert.equal(await stored(`${prefix}c:t:cfg`), written, `${prefix} two reservations`);
    } finally {
      await store.close();
    }
  }
});
