// Third-party hooks wrapped once at compile time (ADR 0155): the distribution's hooks stay in the lists as they are
// and are called directly; a third-party one stands behind a wrapper that names it, bounds it and checks its reply.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Exchange, Logger, PolicyInstance, Reply } from '../sdk/index.ts';
import { PluginHookError, UnwritableReply, ownAs, ownerOf } from './plugin-owner.ts';
import { ownedHooks, runRequestHooks } from './run-hooks.ts';

const ACME = { plugin: 'acmePolicy', package: 'acme@1.0.0' };
const ex = { route: { key: '0/l/r' } } as unknown as Exchange;

function lines(): { logger: Logger; seen: { message: string; fields: Record<string, unknown> }[] } {
  const seen: { message: string; fields: Record<string, unknown> }[] = [];
  const record = (message: string, fields?: Record<string, unknown>): void => void seen.push({ message, fields: fields ?? {} });
  const logger = { debug: record, info: record, warn: record, error: record } as unknown as Logger;
  return { logger, seen };
}

describe('ownedHooks (ADR 0155)', () => {
  it('leaves a first-party hook in the list, called directly with itself as `this`; a list without third-party hooks is the same list', () => {
    const calls: unknown[] = [];
    const cors: PolicyInstance = {
      onRequest(e) {
        calls.push(this, e);
      },
    };
    ownAs(cors, { plugin: 'cors' });
    const list = [cors];
    assert.equal(ownedHooks(list, 'request', 1000), list);
    assert.equal(ownedHooks(null, 'request', 1000), null);
    assert.equal(runRequestHooks(list, ex), undefined);
    assert.deepEqual(calls, [cors, ex]);
  });

  it('wraps a third-party hook once per kind and deadline; the wrapper calls the instance and is owned by its plugin', () => {
    const calls: unknown[] = [];
    const acme: PolicyInstance = {
      onRequest(e) {
        calls.push(this, e);
      },
    };
    ownAs(acme, ACME);
    const cors: PolicyInstance = { onRequest: () => undefined };
    const [first, wrapped] = ownedHooks([cors, acme], 'request', 1000);
    assert.equal(first, cors);
    assert.notEqual(wrapped, acme);
    assert.deepEqual(ownerOf(wrapped), ACME);
    assert.equal(ownedHooks([acme], 'request', 1000)[0], wrapped, 'made once');
    assert.notEqual(ownedHooks([acme], 'request', 0)[0], wrapped, 'another deadline, another wrapper');
    assert.equal(runRequestHooks([cors, wrapped!], ex), undefined);
    assert.deepEqual(calls, [acme, ex]);
  });

  it("names the plugin in a third-party request hook's failure, bounds its promise and checks its reply", async () => {
    const acme = (onRequest: PolicyInstance['onRequest']): PolicyInstance => {
      const instance = { onRequest };
      ownAs(instance, ACME);
      return ownedHooks([instance], 'request', 50)[0]!;
    };
    const thrown = (() => {
      try {
        runRequestHooks([acme(() => { throw new Error('boom'); })], ex);
      } catch (err) {
        return err;
      }
    })();
    assert.ok(thrown instanceof PluginHookError);
    assert.deepEqual(thrown.owner, ACME);
    await assert.rejects(Promise.resolve(runRequestHooks([acme(() => new Promise(() => {}))], ex)), (err: PluginHookError) => err.owner === ACME && /did not settle/.test(err.message));
    assert.throws(() => runRequestHooks([acme(() => true as unknown as Reply)], ex), /request hook returned boolean true, not a reply/);
    // A thenable that is not a Promise is adopted, its rejection tagged.
    const thenable = { then: (_ok: unknown, fail: (e: unknown) => void) => fail(new RangeError('thenable failed')) };
    await assert.rejects(Promise.resolve(runRequestHooks([acme(() => thenable as unknown as Promise<undefined>)], ex)), (err: PluginHookError) => err.owner === ACME && err.message === 'thenable failed');
  });

  it('a third-party response hook leaving its reply unwritable throws UnwritableReply; an async log hook rejection is logged naming it', async () => {
    const { logger, seen } = lines();
    const acme: PolicyInstance = {
      onResponse: (_e, reply) => {
        reply.body = { ok: true } as unknown as string;
      },
      onLog: async () => {
        throw new Error('log shipping failed');
      },
    };
    ownAs(acme, ACME);
    const [response] = ownedHooks([acme], 'response', logger);
    assert.equal(response!.onResponseHeaders, undefined, 'no onResponseHeaders where the instance has none');
    assert.throws(() => response!.onResponse!(ex, { status: 200, headers: {} } as Reply), (err: unknown) => err instanceof UnwritableReply && /response hook left a body of a Object/.test(err.message));
    const [log] = ownedHooks([acme], 'log', logger);
    log!.onLog!(ex, 200);
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(seen.map((l) => [l.message, l.fields.plugin, l.fields.package]), [['log hook failed', 'acmePolicy', 'acme@1.0.0']]);
    // An instance that outlives a reload is wrapped again for the new load's logger, not left with the first one's.
    const next = lines();
    const [reloaded] = ownedHooks([acme], 'log', next.logger);
    assert.notEqual(reloaded, log);
    assert.equal(ownedHooks([acme], 'log', next.logger)[0], reloaded, 'made once per logger');
    reloaded!.onLog!(ex, 200);
    await new Promise((r) => setImmediate(r));
    assert.equal(next.seen.length, 1, "the new logger's");
    assert.equal(seen.length, 1);
  });
});
