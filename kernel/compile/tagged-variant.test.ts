import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { GatewayError } from '../sdk/index.ts';
import { failureOwner, ownerOf } from './plugin-owner.ts';
import { taggedVariant } from './tagged-variant.ts';

const OWNER = { plugin: 'acmeProvider', package: 'acme@1.0.0' };

class Provider {
  readonly kind = 'acme';
  #secret = 'k';
  get origin(): string {
    return `http://${this.#secret}`;
  }
  prepareHeaders(h: Record<string, string>): void {
    h.authorization = this.#secret;
  }
  fails(): void {
    throw new TypeError('provider bug');
  }
  async rejects(): Promise<void> {
    throw new RangeError('async provider bug');
  }
  answers(): void {
    throw new GatewayError(429, 'rate_limited', 'slow down');
  }
  /** A promise-like of another library (not a native Promise) that rejects. */
  thenable(): PromiseLike<string> {
    return { then: (_ok: unknown, fail?: (e: unknown) => void) => fail?.(new SyntaxError('thenable provider bug')) } as unknown as PromiseLike<string>;
  }
  resolvesThenable(): PromiseLike<string> {
    return { then: (ok?: (v: string) => void) => ok?.('fine') } as unknown as PromiseLike<string>;
  }
}

describe('a third-party variant, tagged (ADR 0154)', () => {
  const p = taggedVariant(new Provider(), OWNER, 'llmProvider') as Provider & { prepareBody?: unknown };

  it('reads and calls the instance itself: data, getters, private fields, missing methods', () => {
    const h: Record<string, string> = {};
    p.prepareHeaders(h);
    assert.deepEqual([p.kind, p.origin, h.authorization, p.prepareBody], ['acme', 'http://k', 'k', undefined]);
    assert.equal(p.prepareHeaders, p.prepareHeaders);
    assert.deepEqual(ownerOf(p), OWNER);
  });

  it('marks what a method throws or rejects with, leaving the error as it is; a GatewayError is not marked', async () => {
    const sync = (() => {
      try {
        p.fails();
      } catch (err) {
        return err;
      }
    })();
    assert.ok(sync instanceof TypeError);
    assert.deepEqual(failureOwner(sync), { owner: OWNER, stage: '`llmProvider` variant' });
    const rejected = await p.rejects().then(() => undefined, (err: unknown) => err);
    assert.ok(rejected instanceof RangeError);
    assert.deepEqual(failureOwner(rejected)?.owner, OWNER);
    assert.throws(() => p.answers(), (err: unknown) => err instanceof GatewayError && failureOwner(err) === undefined);
  });

  it('marks the rejection of a promise-like that is not a native Promise; its value passes (ADR 0155)', async () => {
    const rejected = await Promise.resolve(p.thenable()).then(() => undefined, (err: unknown) => err);
    assert.ok(rejected instanceof SyntaxError);
    assert.deepEqual(failureOwner(rejected)?.owner, OWNER);
    assert.equal(await p.resolvesThenable(), 'fine');
  });
});
