import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { modelMatches } from './reservation.ts';

describe('virtual key model patterns', () => {
  it('matches exact names and `*` runs, linearly', () => {
    assert.ok(modelMatches('gpt-4o', 'gpt-4o'));
    assert.ok(!modelMatches('gpt-4o', 'gpt-4o-mini'));
    assert.ok(modelMatches('gpt-4o*', 'gpt-4o-mini'));
    assert.ok(modelMatches('claude-*-4-5', 'claude-haiku-4-5'));
    assert.ok(!modelMatches('claude-*-4-5', 'claude-haiku-4-1'));
    assert.ok(modelMatches('*', 'anything'));
    assert.ok(!modelMatches('a*a', 'a'), 'the prefix and suffix may not overlap');
    assert.ok(modelMatches('*-mini*', 'gpt-4o-mini-2024'));
  });
});
