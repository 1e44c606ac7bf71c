import assert from 'node:assert/strict';
import { it } from 'node:test';
import { estimatePromptTokens } from './estimate.ts';

it('counts characters / 4 of the prompt text in every client format, not roles, ids or media', () => {
  assert.equal(estimatePromptTokens({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hello' }] }), 2);
  assert.equal(estimatePromptTokens({ system: 'abcd', messages: [{ role: 'user', content: [{ type: 'text', text: 'abcd' }, { type: 'image', source: { data: 'x'.repeat(10_000) } }] }] }), 2);
  assert.equal(estimatePromptTokens({ input: 'abcdefgh', instructions: 'abcd' }), 3);
  assert.equal(estimatePromptTokens({ contents: [{ role: 'user', parts: [{ text: 'abcdefgh' }, { inlineData: { data: 'x'.repeat(999) } }] }] }), 2);
  assert.equal(estimatePromptTokens({ model: 'm', temperature: 1 }), 0);
});
