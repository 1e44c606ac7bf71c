import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { knownOrOther, OTHER, VouchedNames } from './known-names.ts';

describe('known names (ADR 0130)', () => {
  it('a name outside the list is _OTHER', () => {
    const methods = new Set(['tools/call']);
    assert.equal(knownOrOther(methods, 'tools/call'), 'tools/call');
    assert.equal(knownOrOther(methods, 'made/up'), OTHER);
  });

  it('keeps at most `max` vouched names, none longer than 256 characters: a permissive upstream is bounded too', () => {
    const names = new VouchedNames(3, ['seeded']);
    for (const name of ['a', 'x'.repeat(257), 'b', 'c', 'd']) names.vouch(name);
    assert.deepEqual(['seeded', 'a', 'b', 'c', 'd'].map((n) => names.label(n)), ['seeded', 'a', 'b', OTHER, OTHER]);
    assert.equal(names.has('x'.repeat(257)), false);
    assert.equal(names.label('x'.repeat(256)), OTHER);
  });
});
