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

  it('reads audio counts: Chat Completions details, Realtime details with cached audio, Gemini modality lists', () => {
    const chat = usageFromCompletions({ prompt_tokens: 90, completion_tokens: 40, prompt_tokens_details: { cached_tokens: 0, audio_tokens: 70 }, completion_tokens_details: { audio_tokens: 30, reasoning_tokens: 0 } })!;
    assert.equal(chat.audioInputTokens, 70);
    assert.equal(chat.audioOutputTokens, 30);
    const realtime = usageFromResponses({ input_tokens: 100, output_tokens: 50, input_tokens_details: { cached_tokens: 20, audio_tokens: 40, cached_tokens_details: { text_tokens: 12, audio_tokens: 8 } }, output_tokens_details: { text_tokens: 10, audio_tokens: 40 } })!;
    assert.deepEqual([realtime.audioInputTokens, realtime.cachedAudioInputTokens, realtime.audioOutputTokens], [40, 8, 40]);
    const gemini = usageFromGemini({
      promptTokenCount: 120,
      cachedContentTokenCount: 50,
      candidatesTokenCount: 30,
      promptTokensDetails: [{ modality: 'TEXT', tokenCount: 20 }, { modality: 'AUDIO', tokenCount: 100 }],
      cacheTokensDetails: [{ modality: 'AUDIO', tokenCount: 40 }, { modality: 'TEXT', tokenCount: 10 }],
      candidatesTokensDetails: [{ modality: 'AUDIO', tokenCount: 25 }, { modality: 'TEXT', tokenCount: 5 }],
    })!;
    assert.deepEqual([gemini.audioInputTokens, gemini.cachedAudioInputTokens, gemini.audioOutputTokens], [100, 40, 25]);
    // The Live API names the output `responseTokenCount` and its details `responseTokensDetails`.
    const live = usageFromGemini({ promptTokenCount: 10, responseTokenCount: 7, responseTokensDetails: [{ modality: 'AUDIO', tokenCount: 7 }] })!;
    assert.deepEqual([live.outputTokens, live.audioOutputTokens], [7, 7]);
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
