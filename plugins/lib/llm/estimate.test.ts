import assert from 'node:assert/strict';
import { it } from 'node:test';
import { estimatePromptTokens, maxOutputTokens } from './estimate.ts';

it('estimates prompt tokens as UTF-8 bytes / 4 over the prompt fields, skipping media and identifiers', () => {
  assert.equal(estimatePromptTokens({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hello' }] }), 2);
  assert.equal(estimatePromptTokens({ system: 'abcd', messages: [{ role: 'user', content: [{ type: 'text', text: 'abcd' }, { type: 'image', source: { data: 'x'.repeat(10_000) } }] }] }), 2);
  assert.equal(estimatePromptTokens({ input: 'abcdefgh', instructions: 'abcd' }), 3);
  assert.equal(estimatePromptTokens({ contents: [{ role: 'user', parts: [{ text: 'abcdefgh' }, { inlineData: { data: 'x'.repeat(999) } }] }] }), 2);
  assert.equal(estimatePromptTokens({ model: 'm', temperature: 1 }), 0);
});

it('counts other scripts by their bytes: CJK 3 a character, Cyrillic 2, an emoji 4 (ADR 0164)', () => {
  assert.equal(estimatePromptTokens({ messages: [{ role: 'user', content: '\u6f22'.repeat(400) }] }), 300);
  assert.equal(estimatePromptTokens({ messages: [{ role: 'user', content: '\u0436'.repeat(10) }] }), 5);
  assert.equal(estimatePromptTokens({ input: '\u{1f600}'.repeat(3) }), 3);
  // A lone surrogate (JSON allows `\ud800`) counts as the replacement character UTF-8 would send: 3 bytes.
  assert.equal(estimatePromptTokens({ input: '\ud800' }), 1);
});

it('nests no deeper than 12 levels: text below them is not counted', () => {
  let deep: unknown = 'x'.repeat(400);
  for (let i = 0; i < 20; i++) deep = [deep];
  assert.equal(estimatePromptTokens({ messages: deep }), 0);
});

it("takes the client's output cap times the answers asked for", () => {
  assert.equal(maxOutputTokens({ max_tokens: 100, n: 3 }), 300);
  assert.equal(maxOutputTokens({ generationConfig: { maxOutputTokens: 50, candidateCount: 2 } }), 100);
  assert.equal(maxOutputTokens({ max_completion_tokens: 10, max_tokens: 99 }), 10);
  assert.equal(maxOutputTokens({ messages: [] }), undefined);
});
