import assert from 'node:assert/strict';
import { test } from 'node:test';
import { KEY_CACHE_MS, KeyCache, VersionedKeyCache } from './key-cache.ts';
import type { KeyRecord } from './types.ts';

const rec = (id: string): KeyRecord => ({ id, budgets: [], prefix: 'sk', createdAt: '', source: 'api' });

test('key cache: a record is trusted KEY_CACHE_MS after the store vouched for it, then looked up again; an entry kept for reuse never answers late', () => {
  const cache = new KeyCache();
  const a = rec('a');
  cache.set('d', a, 0);
  assert.equal(cache.get('d', KEY_CACHE_MS - 1), a);
  assert.equal(cache.get('d', KEY_CACHE_MS), undefined, 'expired');
  assert.equal(cache.get('d', KEY_CACHE_MS + 1), undefined, 'still expired: the kept entry is not revived by a look');
  cache.confirm('d', 5 * KEY_CACHE_MS);
  assert.equal(cache.get('d', 5 * KEY_CACHE_MS), a, 'a reservation that vouched for the digest renews it');
  const b = rec('b');
  cache.set('d', b, 10 * KEY_CACHE_MS);
  assert.equal(cache.get('d', 10 * KEY_CACHE_MS + 1), b, 'a new lookup replaces the record in place');
  cache.drop('d');
  assert.equal(cache.get('d', 10 * KEY_CACHE_MS + 1), undefined, 'the store said it is gone');
  cache.set('d', a, 0);
  cache.drop();
  assert.equal(cache.get('d', 1), undefined);
});

test('versioned key cache: records read again are replaced in place; a new keys version forgets every record', () => {
  const cache = new VersionedKeyCache();
  const a = rec('a');
  cache.set('d', a, 1, 0);
  assert.equal(cache.get('d', 1), a);
  assert.equal(cache.get('d', KEY_CACHE_MS), undefined, 'the version was read too long ago');
  const a2 = rec('a2');
  cache.set('d', a2, 1, KEY_CACHE_MS);
  assert.equal(cache.get('d', KEY_CACHE_MS + 1), a2);
  cache.set('e', rec('e'), 2, KEY_CACHE_MS + 2);
  assert.equal(cache.get('d', KEY_CACHE_MS + 3), undefined, 'read at another version: dropped');
});

test('versioned key cache (ADR 0110, 0112): a memo finds the record and its version without a lookup until an entry is dropped or the version changes', () => {
  const cache = new VersionedKeyCache();
  const a = rec('a');
  cache.set('da', a, 7, 0);
  cache.set('db', rec('b'), 7, 0);
  const memo = {};
  assert.equal(cache.get('da', 1, memo), a);
  const map = (cache as unknown as { rows: { byDigest: Map<string, unknown> } }).rows.byDigest;
  const get = map.get.bind(map);
  let lookups = 0;
  map.get = (k: string) => (lookups++, get(k));
  assert.equal(cache.get('da', 2, memo), a, 'through the memo');
  assert.equal(cache.versionOf('da', memo), 7);
  assert.equal(lookups, 0);
  assert.equal(cache.get('db', 3, memo)?.id, 'b', 'another digest: looked up');
  assert.equal(lookups, 1);
  assert.equal(cache.get('db', KEY_CACHE_MS, memo), undefined, 'the version read KEY_CACHE_MS ago no longer vouches, memo or not');
  cache.drop('da');
  assert.equal(cache.get('da', 4, memo), undefined, 'a dropped entry is not served from a memo');
  assert.equal(cache.versionOf('da', memo), undefined);
  cache.set('da', a, 7, 5);
  assert.equal(cache.get('da', 6, memo), a);
  cache.saw(8, 7);
  assert.equal(cache.get('da', 8, memo), undefined, 'a new keys version drops every record, memos too');
  assert.equal(cache.versionOf('da', memo), undefined);
});

test('versioned key cache (ADR 0187): past the rows first made (the numbers\' array grows) every record keeps its version', () => {
  const cache = new VersionedKeyCache();
  for (let i = 0; i < 300; i++) cache.set(`d${i}`, rec(`k${i}`), 3, 0);
  for (let i = 0; i < 300; i++) assert.equal(cache.get(`d${i}`, 10)?.id, `k${i}`);
});
