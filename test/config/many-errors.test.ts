// ADR 0172: a config with tens of thousands of problems (a 1 MiB paste to the admin UI, or a file given to
// --validate-only) is worded in time that grows with the problems, not with their square.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ErrorObject } from 'ajv';
import { translateErrors } from '../../kernel/config/schema-error-messages.ts';
import { didYouMean } from '../../kernel/config/did-you-mean.ts';

const wording = { notInstalled: new Set<string>(), slotNouns: {}, marks: undefined };
const POLICIES = { directResponse: {}, requestHeaderModifier: {}, localRateLimit: {}, cors: {}, basicAuth: {} };

describe('wording many config problems', () => {
  it('30,000 failed `anyOf`s are worded without comparing each with every other error', () => {
    // Before: each combinator error searched every error for a more specific one (900 million comparisons here).
    const errors = Array.from({ length: 30_000 }, (_, i): ErrorObject => ({
      keyword: 'anyOf',
      instancePath: `/binds/0/listeners/0/routes/${i}/timeout`,
      schemaPath: '#/$defs/route/properties/timeout/anyOf',
      params: {},
      message: 'must match a schema in anyOf',
    }));
    const started = Date.now();
    const issues = translateErrors(errors, wording);
    assert.equal(issues.length, 30_000);
    assert.ok(Date.now() - started < 5_000, `took ${Date.now() - started} ms`);
  });

  it('a combinator error with a more specific one below it is still left out', () => {
    const errors: ErrorObject[] = [
      { keyword: 'type', instancePath: '/routes/10/timeout', schemaPath: '#/x/anyOf/0/type', params: { type: 'string' }, message: '', data: 5 },
      { keyword: 'anyOf', instancePath: '/routes/1', schemaPath: '#/x/anyOf', params: {}, message: 'must match a schema in anyOf' },
      { keyword: 'anyOf', instancePath: '/routes/10', schemaPath: '#/x/anyOf', params: {}, message: 'must match a schema in anyOf' },
      { keyword: 'anyOf', instancePath: '/routes/2', schemaPath: '#/x/anyOf', params: {}, message: 'must match a schema in anyOf' },
    ];
    // As before: `/routes/1` is a prefix of `/routes/10/...` and counts as above it; `/routes/2` has nothing below.
    assert.deepEqual(
      translateErrors(errors, wording).map((i) => i.path.join('/')),
      ['routes/10/timeout', 'routes/2'],
    );
  });

  it('the same typo on 24,387 routes: every one worded with its fix', () => {
    const errors = Array.from({ length: 24_387 }, (_, i): ErrorObject => ({
      keyword: 'additionalProperties',
      instancePath: `/binds/0/listeners/0/routes/${i}/policies`,
      schemaPath: '#/$defs/policies/additionalProperties',
      params: { additionalProperty: 'directRespons' },
      message: 'must NOT have additional properties',
      parentSchema: { properties: POLICIES },
    }));
    const issues = translateErrors(errors, wording);
    assert.equal(issues.length, 24_387);
    assert.equal(issues[24_386]!.message, 'unknown key `directRespons`; did you mean `directResponse`?');
  });

  it('did-you-mean skips candidates whose length alone rules them out, with the same answers', () => {
    assert.equal(didYouMean('directRespons', Object.keys(POLICIES)), 'directResponse');
    assert.equal(didYouMean('cros', Object.keys(POLICIES)), 'cors');
    assert.equal(didYouMean('x'.repeat(5000), Object.keys(POLICIES)), undefined);
    assert.equal(didYouMean('CORS', ['cors']), 'cors');
    assert.equal(didYouMean('abc', ['abcdef', 'abd']), 'abd');
  });
});
