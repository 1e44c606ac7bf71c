// Audio tokens at their own prices (ADR 0192): the catalog format names audio input, cached audio input and audio
// output prices; a call's audio counts (within its input, cached and output totals) are billed at them, the rest at
// the text prices; without audio prices audio is billed as text, as before.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { callCost, parsePriceCatalog } from './prices.ts';

const REALTIME = { input: 4, cachedInput: 0.4, output: 16, audioInput: 32, cachedAudioInput: 0.4, audioOutput: 64 };

describe('audio prices', () => {
  it('bills audio input, cached audio and audio output at their prices, text at the text prices', () => {
    // 100 input: 30 cached (10 of them audio), 50 audio in all; 60 output, 45 of them audio.
    const usage = { inputTokens: 100, cachedInputTokens: 30, cachedAudioInputTokens: 10, audioInputTokens: 50, outputTokens: 60, audioOutputTokens: 45 };
    const want = (30 * 4 + 20 * 0.4 + 40 * 32 + 10 * 0.4 + 15 * 16 + 45 * 64) / 1_000_000;
    assert.ok(Math.abs(callCost(REALTIME, usage) - want) < 1e-12, `${callCost(REALTIME, usage)} != ${want}`);
  });

  it('without audio prices audio is text; cached audio without its own price is billed as audio input', () => {
    const usage = { inputTokens: 100, cachedInputTokens: 30, cachedAudioInputTokens: 10, audioInputTokens: 50, outputTokens: 60, audioOutputTokens: 45 };
    const text = { input: 4, cachedInput: 0.4, output: 16 };
    assert.ok(Math.abs(callCost(text, usage) - (70 * 4 + 30 * 0.4 + 60 * 16) / 1_000_000) < 1e-12);
    const noCachedAudio = { input: 4, cachedInput: 0.4, output: 16, audioInput: 32, audioOutput: 64 };
    assert.ok(Math.abs(callCost(noCachedAudio, usage) - (30 * 4 + 20 * 0.4 + 50 * 32 + 15 * 16 + 45 * 64) / 1_000_000) < 1e-12);
  });

  it('counts that do not add up are bounded by their totals (never a negative part)', () => {
    const usage = { inputTokens: 10, audioInputTokens: 50, cachedInputTokens: 0, cachedAudioInputTokens: 7, outputTokens: 5, audioOutputTokens: 9 };
    // Audio at most the input (10), cached audio at most the cached (0); audio output at most the output (5).
    assert.ok(Math.abs(callCost(REALTIME, usage) - (10 * 32 + 5 * 64) / 1_000_000) < 1e-12);
  });

  it('a catalog file may name audio prices; they are validated like the others', () => {
    const catalog = parsePriceCatalog(JSON.stringify({ providers: { openai: { 'gpt-realtime': REALTIME } } }), 'c.json');
    assert.deepEqual(catalog.get('openai')?.exact.get('gpt-realtime'), REALTIME);
    assert.throws(() => parsePriceCatalog('{"providers":{"openai":{"m":{"input":1,"output":1,"audioOutput":-2}}}}', 'c.json'), /c\.json:1:\d+: `openai\.m\.audioOutput` must be a number/);
    assert.throws(() => parsePriceCatalog('{"providers":{"openai":{"m":{"input":1,"output":1,"audio":2}}}}', 'c.json'), /unknown price field `audio`.*audioInput/);
  });
});
