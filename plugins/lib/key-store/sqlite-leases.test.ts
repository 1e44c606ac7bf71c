// Budget leases on the embedded store (ADR 0108): the scenarios every leasing store must pass
// (test/helpers/key-store-leases.ts), two connections to one file standing for two processes; and the gateway's store
// (openStore) leases unless the config says `leases: false`.
import { strict as assert } from 'node:assert';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { rmSync } from 'node:fs';
import { checkLeaseDraws, checkLeaseNearLimit, checkLeaseRefusals, checkLeasesTogether } from '../../../test/helpers/key-store-leases.ts';
import { testTempDir } from '../../../test/helpers/temp-dir.ts';
import { LEASE_REQUESTS } from './counter-leases.ts';
import type { LeaseOptions } from './counter-leases.ts';
import { openStore } from './open-store.ts';
import { SqliteKeyStore } from './sqlite-store.ts';
import type { CounterLine } from './types.ts';

const dir = testTempDir('switchyard-sqlite-leases-');
after(() => rmSync(dir, { recursive: true, force: true }));
const open = (name: string, leases: LeaseOptions = {}) => SqliteKeyStore.open(join(dir, `${name}.db`), { everyMs: 3_600_000 }, { leases });

test('sqlite store (ADR 0108): a counter far from its limit is leased: stored once per LEASE_REQUESTS reservations, refunds kept in the room, every amount in the file once the room is given back', () => checkLeaseDraws(open));
test('sqlite store (ADR 0108): near its limit a lease line is refused and the reservation written again without it: the budget stops exactly at its limit', () => checkLeaseNearLimit(open));
test('sqlite store (ADR 0108): two connections leasing one budget at once never pass its limit', () => checkLeasesTogether(open));
test("sqlite store (ADR 0108): a reservation refused by another line, or whose key is gone, gives its drawn amounts back and answers the request's own line index", () => checkLeaseRefusals(open));

test('sqlite store (ADR 0108): the gateway store leases by default, grouped or not; `leases: false` writes every reservation; a store opened without options does not lease', async () => {
  const line: CounterLine = { counter: 't:cfg', limit: 1e6, amount: 1, expiresAt: 0 };
  for (const [name, leases, written] of [['on', undefined, 1 + LEASE_REQUESTS], ['off', false, 2]] as const) {
    const path = join(dir, `cfg-${name}.db`);
    const store = await openStore({ sqlite: { path, ...(leases === undefined ? {} : { leases }) } }, dir);
    const reader = await SqliteKeyStore.open(path, { everyMs: 3_600_000 });
    try {
      for (let i = 0; i < 2; i++) assert.equal(await store.reserve([line]), -1);
      assert.deepEqual(await reader.values([line.counter]), [written], `${name}: two reservations`);
      assert.equal(await reader.reserve([line]), -1);
      assert.deepEqual(await reader.values([line.counter]), [written + 1], 'a store opened without options writes each reservation');
    } finally {
      await store.close();
      await reader.close();
    }
  }
});
