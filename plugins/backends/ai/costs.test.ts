import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parsePriceCatalog } from '../../lib/llm/prices.ts';
import { builtinPrices } from './costs.ts';
import builtin from './default-prices.json' with { type: 'json' };

describe('the built-in price catalog', () => {
  it('follows the catalog format: the positioned parse of default-prices.json gives the catalog built from it', () => {
    const parsed = parsePriceCatalog(JSON.stringify(builtin, null, 2), 'default-prices.json');
    assert.deepEqual(builtinPrices(), parsed);
    assert.ok((parsed.get('openai')?.exact.size ?? 0) > 0, 'it has prices');
  });
});

describe('the built-in catalog prices cache reads', () => {
  it('gives every chat model a cachedInput price (cached tokens are not priced as input), embeddings aside', () => {
    const missing: string[] = [];
    for (const [provider, models] of Object.entries(builtin.providers)) {
      for (const [model, price] of Object.entries(models as Record<string, { cachedInput?: number }>)) {
        if (!model.includes('embedding') && price.cachedInput === undefined) missing.push(`${provider}.${model}`);
      }
    }
    assert.deepEqual(missing, []);
  });

  it("prices Gemini 2.5 cache reads at Google's published 10 % of input", () => {
    const gemini = builtinPrices().get('gcp.gemini')!;
    assert.equal(gemini.exact.get('gemini-2.5-flash')?.cachedInput, 0.03);
    assert.equal(gemini.exact.get('gemini-2.5-flash-lite')?.cachedInput, 0.01);
    assert.equal(gemini.exact.get('gemini-2.5-pro')?.cachedInput, 0.125);
  });
});

describe('the built-in catalog prices audio (ADR 0192)', () => {
  it("prices OpenAI's realtime and audio models' audio tokens at their published audio prices", () => {
    const openai = builtinPrices().get('openai')!;
    assert.deepEqual(openai.exact.get('gpt-realtime'), { input: 4, cachedInput: 0.4, output: 16, audioInput: 32, cachedAudioInput: 0.4, audioOutput: 64 });
    assert.equal(openai.exact.get('gpt-4o-mini-realtime-preview')?.audioOutput, 20);
    assert.equal(openai.exact.get('gpt-audio')?.audioInput, 32);
    assert.equal(builtinPrices().get('gcp.gemini')!.exact.get('gemini-2.5-flash')?.audioInput, 1);
  });
});
