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
