// How long a fetched JWKS or OpenAPI document is kept, from its answer's Cache-Control.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { cacheTtlMs } from './max-age.ts';

const BOUNDS = { defaultMs: 86_400_000, minMs: 60_000, maxMs: 86_400_000 };

describe('cacheTtlMs', () => {
  it('takes max-age or s-maxage within the bounds, the default without either', () => {
    assert.equal(cacheTtlMs(undefined, BOUNDS), 86_400_000);
    assert.equal(cacheTtlMs('public', BOUNDS), 86_400_000);
    assert.equal(cacheTtlMs('public, max-age=300', BOUNDS), 300_000);
    // `s-maxage` (RFC 9111 spells it without the second hyphen; `s-max-age` used to be looked for) when no `max-age`.
    assert.equal(cacheTtlMs('s-maxage="120"', BOUNDS), 120_000);
    assert.equal(cacheTtlMs('s-maxage=120, max-age=300', BOUNDS), 300_000);
    assert.equal(cacheTtlMs('s-max-age=120', BOUNDS), 86_400_000);
    assert.equal(cacheTtlMs('max-age=1', BOUNDS), 60_000);
    assert.equal(cacheTtlMs('max-age=0', BOUNDS), 60_000);
    assert.equal(cacheTtlMs('max-age=999999999', BOUNDS), 86_400_000);
  });

  it('no-cache and no-store mean the floor', () => {
    assert.equal(cacheTtlMs('no-cache', BOUNDS), 60_000);
    assert.equal(cacheTtlMs('private, no-store, max-age=600', BOUNDS), 60_000);
  });
});
