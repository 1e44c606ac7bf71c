import assert from 'node:assert/strict';
import { it } from 'node:test';
import { basicCredential, bearerToken } from './credentials.ts';

it('bearerToken reads `Bearer <token>` case-insensitively and nothing else', () => {
  assert.equal(bearerToken('Bearer abc.def.ghi'), 'abc.def.ghi');
  assert.equal(bearerToken('bearer   abc  '), 'abc');
  assert.equal(bearerToken('BEARER\tabc'), 'abc');
  for (const v of [undefined, '', 'Bearer', 'Bearer ', 'Bearer    ', 'Basic abc', 'Bearerabc', ['Bearer a']] as const) {
    assert.equal(bearerToken(v as string | string[] | undefined), undefined, JSON.stringify(v));
  }
});

it('basicCredential reads `Basic <b64>` the same way', () => {
  assert.equal(basicCredential('Basic YTpi'), 'YTpi');
  assert.equal(basicCredential('basic  YTpi '), 'YTpi');
  for (const v of [undefined, 'Basic', 'Basic ', 'Bearer YTpi', 'BasicYTpi']) assert.equal(basicCredential(v), undefined, String(v));
});
