// Token counts as providers report them, normalised: a count that is not a non-negative whole number is not a count.
// A provider (or anything posing as one) answering `prompt_tokens: -500` would otherwise settle a virtual key's budget
// with a credit, and make token counters and costs go backwards.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { usageFromCompletions, usageFromGemini, usageFromMessages, usageFromResponses } from './usage.ts';

describe('LLM usage', () => {
  it('reads the counts of each provider shape', () => {
    assert.deepEqual(usageFromCompletions({ prompt_tokens: 9, completion_tokens: 20, prompt_tokens_details: { cached_tokens: 4 } }), { inputTokens: 9, outputTokens: 20, cachedInputTokens: 4, reasoningTokens: undefined });
    assert.equal(usageFromResponses({ input_tokens: 3, output_tokens: 5 })?.outputTokens, 5);
    assert.equal(usageFromMessages({ input_tokens: 3, output_tokens: 5, cache_read_input_tokens: 2 })?.inputTokens, 5);
    assert.equal(usageFromGemini({ promptTokenCount: 3, candidatesTokenCount: 4, thoughtsTokenCount: 1 })?.outputTokens, 5);
  });

  it('a negative, fractional, huge or non-finite count is no count', () => {
    for (const bad of [-500, -0.5, 2.5, Number.MAX_SAFE_INTEGER + 2, 1e300]) {
      const u = usageFromCompletions({ prompt_tokens: bad, completion_tokens: bad })!;
      assert.equal(u.inputTokens, undefined, String(bad));
      assert.equal(u.outputTokens, undefined, String(bad));
      assert.equal(usageFromMessages({ input_tokens: 10, output_tokens: 1, cache_read_input_tokens: bad })?.inputTokens, 10, String(bad));
    }
  });
});
