import assert from 'node:assert/strict';
import { it } from 'node:test';
import { jwtAttribute, jwtAttributeKey } from './index.ts';

it('the jwt attribute key is named `jwt` (the CEL variable) and is one shared key', () => {
  assert.equal(jwtAttribute.name, 'jwt');
  assert.equal(jwtAttributeKey(), jwtAttribute);
});
