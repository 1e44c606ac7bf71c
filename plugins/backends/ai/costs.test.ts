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
