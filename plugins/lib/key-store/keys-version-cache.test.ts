// The Redis store's key cache (ADR 0106) on its own, with made-up times: what vouches for a record, when a
// reservation must carry its digest, and which version reads count.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { KEY_CACHE_MS } from './key-cache.ts';
import { KEY_RECHECK_MS, KeysVersionCache } from './keys-version-cache.ts';
import type { RowHold } from './keys-version-cache.ts';
import type { KeyRecord } from './types.ts';

const rec = (id: string): KeyRecord => ({ id, budgets: [], prefix: 'sk', createdAt: '', source: 'api' });
/** A reservation's hold on `digest`'s row, as the store takes it. */
const hold = (cache: KeysVersionCache, digest: string): RowHold => ({ row: cache.rowOf(digest), drops: cache.drops });

test('keys version cache: a record is used while vouched for within KEY_CACHE_MS, or while a fresh read of the version is the one it was vouched at; its digest is due every KEY_RECHECK_MS', () => {
  const cache = new KeysVersionCache();
  const dues: string[] = [];
  const due = (d: string): number => dues.push(d);
  const a = rec('a');
  cache.set('da', a, 7, 0);
  assert.equal(cache.expected, 7, 'the lookup read the version');
  assert.equal(cache.get('da', KEY_CACHE_MS - 1, due), a);
  assert.equal(cache.get('da', KEY_CACHE_MS, due), undefined, 'no fresh version read: looked up again');
  assert.equal(cache.needsCheck(hold(cache, 'da'), 10), false, 'vouched at the version reservations are sent against');
  cache.saw(7, 5 * KEY_CACHE_MS);
  assert.equal(cache.get('da', 5 * KEY_CACHE_MS + 1, due), a, 'idle, but the version read since is its own');
  cache.saw(8, 6 * KEY_CACHE_MS);
  assert.equal(cache.get('da', 6 * KEY_CACHE_MS + 1, due), undefined, 'a key changed somewhere since');
  assert.equal(cache.needsCheck(hold(cache, 'da'), 6 * KEY_CACHE_MS + 1), true, 'its reservation carries the digest');
  cache.confirm(hold(cache, 'da'), 6 * KEY_CACHE_MS + 2, 8, true);
  assert.equal(cache.needsCheck(hold(cache, 'da'), 6 * KEY_CACHE_MS + 3), false);
  assert.equal(cache.get('da', 6 * KEY_CACHE_MS + 3, due), a);
  // Confirmed by the version only (no digest sent) for longer than KEY_RECHECK_MS: the digest is due again.
  const later = 6 * KEY_CACHE_MS + 2 + KEY_RECHECK_MS;
  cache.confirm(hold(cache, 'da'), later - 10, 8, false);
  cache.saw(8, later);
  assert.deepEqual(dues, [], 'no digest check due before KEY_RECHECK_MS');
  assert.equal(cache.get('da', later, due), a, 'vouched for by a reservation within KEY_CACHE_MS');
  assert.deepEqual(dues, ['da'], 'but its digest was checked KEY_RECHECK_MS ago: checked beside the request');
  assert.equal(cache.get('da', later + 1, due), a);
  assert.deepEqual(dues, ['da'], 'once per KEY_CACHE_MS');
  assert.equal(cache.needsCheck(hold(cache, 'da'), later), true, 'and its reservation carries the digest');
  assert.equal(cache.get('da', later + KEY_CACHE_MS, due), undefined, 'and without a new vouch, not by the version alone');
  assert.equal(cache.needsCheck(hold(cache, 'nope'), 0), true, 'a digest not kept is always checked');
  cache.drop('da');
  assert.equal(cache.get('da', later, due), undefined);
});

test('keys version cache: of two version reads sent in the same millisecond the higher counts; a lower one sent later is taken (a store emptied by hand)', () => {
  const cache = new KeysVersionCache();
  cache.saw(5, 100);
  cache.saw(4, 100);
  assert.equal(cache.expected, 5);
  cache.saw(4, 99);
  assert.equal(cache.expected, 5, 'an older read');
  cache.saw(0, 101);
  assert.equal(cache.expected, 0);
});

test('keys version cache (ADR 0110, 0187): a memo finds the row again without a lookup until a row is given up; a memo of another digest is not used', () => {
  const cache = new KeysVersionCache();
  const a = rec('a');
  cache.set('da', a, 1, 0);
  cache.set('db', rec('b'), 1, 0);
  const memo = {};
  const row = cache.rowOf('da', memo);
  assert.equal(cache.get('da', 0, () => undefined, memo), a);
  const map = (cache as unknown as { rows: { byDigest: Map<string, unknown> } }).rows.byDigest;
  const get = map.get.bind(map);
  let lookups = 0;
  map.get = (k: string) => (lookups++, get(k));
  assert.equal(cache.rowOf('da', memo), row, 'through the memo');
  assert.equal(lookups, 0);
  assert.equal(cache.get('db', 0, () => undefined, memo)?.id, 'b', 'another digest: looked up');
  assert.equal(lookups, 1);
  cache.rowOf('da', memo);
  cache.drop('db');
  assert.equal(cache.rowOf('da', memo), row, 'after a drop: looked up again, the same row');
  assert.equal(lookups, 4, 'the drop\'s own, then the lookup');
  cache.drop('da');
  assert.equal(cache.rowOf('da', memo), -1, 'a row given up is not served from a memo');
  cache.drop('nope');
  cache.set('da', a, 2, 10);
  assert.equal(cache.get('da', 10, () => undefined, memo), a);
  assert.equal(cache.needsCheck(hold(cache, 'da'), 10), false, 'vouched at version 2');
});

test('keys version cache (ADR 0177, 0187): a row given up while its reservation was on the way vouches for nothing, though the row is another key\'s now', () => {
  const cache = new KeysVersionCache();
  cache.set('da', rec('a'), 1, 0);
  const stale = hold(cache, 'da');
  cache.drop('da');
  cache.set('db', rec('b'), 1, 0);
  const b = hold(cache, 'db');
  assert.equal(b.row, stale.row, 'the row was given again');
  cache.confirm(stale, 50_000, 1, true);
  assert.equal(cache.get('db', 50_000, () => undefined), undefined, 'b was not vouched for by the reservation of a');
  assert.ok(cache.needsCheck(stale, 0), 'a row given up is checked by digest');
  assert.ok(cache.needsCheck(b, 50_000), 'nor was the digest of b checked by it');
  cache.drop();
  assert.ok(cache.needsCheck(b, 0), 'every row given up at once: a hold from before is checked by digest');
  cache.set('dc', rec('c'), 1, 0);
  cache.confirm(b, 60_000, 1, true);
  assert.equal(cache.get('dc', 60_000, () => undefined), undefined, 'and vouches for nothing');
});

test('keys version cache (ADR 0187): a digest the store does not know gives nothing up, so the memos of the keys in use stay good', () => {
  const cache = new KeysVersionCache();
  cache.set('da', rec('a'), 1, 0);
  const before = cache.drops;
  for (let i = 0; i < 100; i++) cache.drop(`unknown-${i}`);
  assert.equal(cache.drops, before);
});

test('keys version cache (ADR 0187): past the rows first made (the times\' array grows) every record keeps its times and version', () => {
  const cache = new KeysVersionCache();
  for (let i = 0; i < 300; i++) cache.set(`d${i}`, rec(`k${i}`), 3, 100);
  for (let i = 0; i < 300; i++) {
    assert.equal(cache.get(`d${i}`, 200, () => assert.fail('not due'))?.id, `k${i}`);
    assert.equal(cache.needsCheck({ row: cache.rowOf(`d${i}`), drops: cache.drops }, 200), false);
  }
});
