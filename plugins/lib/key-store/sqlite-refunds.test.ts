// The embedded store holds refunds as the shared stores do (ADR 0097, settlement-queue.ts): two connections on one
// file stand for two processes; what one holds the other does not see until a reservation of that counter, the hold's
// end or a read through the holding store writes it.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { checkRefundsHeld, withTwoStores } from '../../../test/helpers/key-store-sums.ts';
import { SqliteKeyStore } from './sqlite-store.ts';

const dir = mkdtempSync(join(tmpdir(), 'swy-sqlite-refunds-'));
after(() => rmSync(dir, { recursive: true, force: true }));

test('sqlite store: a charge is written within SETTLE_DELAY_MS, a refund held until a reservation names its counter or REFUND_HOLD_MS; reads write held refunds first (ADR 0097)', () =>
  withTwoStores(() => SqliteKeyStore.open(join(dir, 'held.db'), { everyMs: 3_600_000 }), checkRefundsHeld));
