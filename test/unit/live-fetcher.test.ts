// A kept object fetches with the fetcher of the newest config in use: a compile released at once (failed, dropped)
// gives it back the live one's; a retired config's going changes nothing while a newer one is in use.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { CompileContext } from 'switchyard/sdk';
import { GenerationalResources } from '../../kernel/resources/resource-cache.ts';
import { handFetcher } from '../../plugins/lib/live-fetcher/live-fetcher.ts';

describe('handFetcher', () => {
  it('keeps the fetcher of the newest config still in use', async () => {
    const resources = new GenerationalResources();
    const kept = { fetcher: '', setFetcher(f: string) { this.fetcher = f; } };
    const compile = (generation: number, fetcher: string): void => {
      const ctx = { resources: resources.forGeneration(generation) } as unknown as CompileContext;
      const held = ctx.resources.get('kept', () => kept);
      handFetcher(ctx, 'kept', held, fetcher);
    };
    compile(1, 'one');
    assert.equal(kept.fetcher, 'one');
    compile(2, 'two (fails)');
    assert.equal(kept.fetcher, 'two (fails)');
    await resources.release(2);
    assert.equal(kept.fetcher, 'one', 'a failed compile gives the live fetcher back');
    compile(3, 'three');
    await resources.release(1);
    assert.equal(kept.fetcher, 'three', 'the retired config going leaves the newer one');
    compile(4, 'four (dropped)');
    compile(5, 'five (fails)');
    await resources.release(4);
    assert.equal(kept.fetcher, 'five (fails)', 'an older one going leaves the newest in use');
    await resources.release(5);
    assert.equal(kept.fetcher, 'three');
  });
});
