// The Redis store's key cache (ADR 0106) on its own, with made-up times: what vouches for a record, when a
// reservation must carry its digest, and which version reads count.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { KEY_CACHE_MS } from './key-cache.ts';
import { KEY_RECHECK_MS, KeysVersionCache } from './keys-version-cache.ts';
import type { KeyRecord } from './types.ts';

const rec = (id: string): KeyRecord => ({ id, budgets: [], prefix: 'sk', createdAt: '', source: 'api' });

test('keys version cache: a record is used while vouched for within KEY_CACHE_MS, or while a fresh read of the version is the one it was vouched at; its digest is due every KEY_RECHECK_MS', () => {
  const cache = new KeysVersionCache();
  const dues: string[] = [];
  const due = (d: string): number => dues.push(d);
  const a = rec('a');
  cache.set('da', a, 7, 0);
  assert.equal(cache.expected, 7, 'the lookup read the version');
  assert.equal(cache.get('da', KEY_CACHE_MS - 1, due), a);
  assert.equal(cache.get('da', KEY_CACHE_MS, due), undefined, 'no fresh version read: looked up again');
  assert.equal(cache.needsCheck(cache.entryOf('da'), 10), false, 'vouched at the version reservations are sent against');
  cache.saw(7, 5 * KEY_CACHE_MS);
  assert.equal(cache.get('da', 5 * KEY_CACHE_MS + 1, due), a, 'idle, but the version read since is its own');
  cache.saw(8, 6 * KEY_CACHE_MS);
  assert.equal(cache.get('da', 6 * KEY_CACHE_MS + 1, due), undefined, 'a key changed somewhere since');
  assert.equal(cache.needsCheck(cache.entryOf('da'), 6 * KEY_CACHE_MS + 1), true, 'its reservation carries the digest');
  cache.confirm(cache.entryOf('da'), 6 * KEY_CACHE_MS + 2, 8, true);
  assert.equal(cache.needsCheck(cache.entryOf('da'), 6 * KEY_CACHE_MS + 3), false);
  assert.equal(cache.get('da', 6 * KEY_CACHE_MS + 3, due), a);
  // Confirmed by the version only (no digest sent) for longer than KEY_RECHECK_MS: the digest is due again.
  const later = 6 * KEY_CACHE_MS + 2 + KEY_RECHECK_MS;
  cache.confirm(cache.entryOf('da'), later - 10, 8, false);
  cache.saw(8, later);
  assert.deepEqual(dues, [], 'no digest check due before KEY_RECHECK_MS');
  assert.equal(cache.get('da', later, due), a, 'vouched for by a reservation within KEY_CACHE_MS');
  assert.deepEqual(dues, ['da'], 'but its digest was checked KEY_RECHECK_MS ago: checked beside the request');
  assert.equal(cache.get('da', later + 1, due), a);
  assert.deepEqual(dues, ['da'], 'once per KEY_CACHE_MS');
  assert.equal(cache.needsCheck(cache.entryOf('da'), later), true, 'and its reservation carries the digest');
  assert.equal(cache.get('da', later + KEY_CACHE_MS, due), undefined, 'and without a new vouch, not by the version alone');
  assert.equal(cache.needsCheck(cache.entryOf('nope'), 0), true, 'a digest not kept is always checked');
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

test('keys version cache (ADR 0110): a memo finds the entry again without a lookup until an entry is dropped; a memo of another digest is not used', () => {
  const cache = new KeysVersionCache();
  const a = rec('a');
  cache.set('da', a, 1, 0);
  cache.set('db', rec('b'), 1, 0);
  const memo = {};
  const e = cache.entryOf('da', memo);
  assert.equal(e?.record, a);
  const map = (cache as unknown as { byDigest: Map<string, unknown> }).byDigest;
  const get = map.get.bind(map);
  let lookups = 0;
  map.get = (k: string) => (lookups++, get(k));
  assert.equal(cache.entryOf('da', memo), e, 'through the memo');
  assert.equal(lookups, 0);
  assert.equal(cache.entryOf('db', memo)?.record.id, 'b', 'another digest: looked up');
  assert.equal(lookups, 1);
  cache.entryOf('da', memo);
  cache.drop('db');
  assert.equal(cache.entryOf('da', memo), e, 'after a drop: looked up again, the same entry');
  assert.equal(lookups, 4, 'the drop\'s own (it frees the entry\'s row of times, ADR 0177), then the lookup');
  cache.drop('da');
  cache.set('da', a, 2, 10);
  const again = cache.entryOf('da', memo);
  assert.notEqual(again, e, 'a dropped entry is not served from a memo');
  assert.equal(again?.version, 2);
});

test('keys version cache (ADR 0177): an entry dropped while its reservation was on the way vouches for nothing, though its row of times is another key\'s now', () => {
  const cache = new KeysVersionCache();
  cache.set('da', rec('a'), 1, 0);
  const stale = cache.entryOf('da')!;
  cache.drop('da');
  cache.set('db', rec('b'), 1, 0);
  const b = cache.entryOf('db')!;
  assert.equal(b.row, 0, 'the row was given again');
  cache.confirm(stale, 50_000, 1, true);
  assert.equal(cache.get('db', 50_000, () => undefined), undefined, 'b was not vouched for by the reservation of a');
  assert.ok(cache.needsCheck(stale, 0), 'a dropped entry is checked by digest');
  assert.ok(cache.needsCheck(b, 50_000), 'nor was the digest of b checked by it');
  cache.drop();
  assert.equal(b.row, -1, 'every entry dropped at once is marked too');
  cache.confirm(b, 60_000, 1, true);
});
