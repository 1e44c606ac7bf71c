// Policy sets as plugins see them: layering (top layer wins per key), request hooks run on a copy of the exchange,
// per-attempt hooks bound to a detached copy that outlives the request.
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import type { IncomingMessage } from 'node:http';
import { describe, it } from 'node:test';
import { defineAttribute, definePolicy, localReply } from '../sdk/index.ts';
import type { PolicyInstance, PolicyPlugin, UpstreamAttempt } from '../sdk/index.ts';
import { ExchangeImpl } from '../runtime/exchange-impl.ts';
import { CompiledPolicySet, LayeredPolicySet } from './policy-set.ts';

const WHO = defineAttribute<string>('test.who');

function plugin(key: string, phase: PolicyPlugin['phase'] = 'mutate'): PolicyPlugin {
  return definePolicy({ key, description: key, schema: {}, attach: ['routePolicies'], phase, compile: () => ({}) }) as unknown as PolicyPlugin;
}

function set(entries: [string, PolicyInstance, PolicyPlugin['phase']?][]): CompiledPolicySet {
  return new CompiledPolicySet(entries.map(([key, instance, phase]) => ({ key, plugin: plugin(key, phase), instance })));
}

function exchange(): ExchangeImpl {
  const socket = Object.assign(new EventEmitter(), { remoteAddress: '127.0.0.1', remotePort: 5000 });
  const req = Object.assign(new EventEmitter(), { method: 'POST', url: '/mcp?x=1', headers: { host: 'gw.example', 'x-client': 'c' }, rawHeaders: ['Host', 'gw.example', 'x-client', 'c'], socket }) as unknown as IncomingMessage;
  return new ExchangeImpl(req, undefined, 'http', 'gw.example', '/mcp', '?x=1', 0);
}

describe('policy sets', () => {
  it('layer: the top layer replaces a key, keeps the others, merges facets field by field', async () => {
    const seen: string[] = [];
    const hook = (name: string): PolicyInstance => ({ onUpstream: (_ex, a) => void (a.headers[`x-${name}`] = name, seen.push(name)) });
    const route = set([['backendAuth', { ...hook('route-auth'), facets: { requestTimeoutMs: 5, attemptTimeoutMs: 1 } }, 'upstream'], ['other', hook('route-other'), 'upstream']]);
    const target = set([['backendAuth', { ...hook('target-auth'), facets: { requestTimeoutMs: 9 } }, 'upstream']]);
    const layered = route.layer(target);
    assert.ok(layered instanceof LayeredPolicySet);
    assert.deepEqual([...layered.keys].sort(), ['backendAuth', 'other']);
    assert.deepEqual(layered.facets, { requestTimeoutMs: 9, attemptTimeoutMs: 1 });
    const attempt: UpstreamAttempt = { method: 'POST', path: '/', origin: 'http://u', headers: {}, body: undefined, attempt: 0 };
    await layered.attemptHook(exchange())!(attempt);
    assert.deepEqual(seen.sort(), ['route-other', 'target-auth']);
    assert.equal(attempt.headers['x-route-auth'], undefined);
    assert.equal(CompiledPolicySet.EMPTY.attemptHook(exchange()), undefined);
  });

  it('runRequestHooks works on a copy: headers and attributes change for the view only; a reply is returned', async () => {
    const ex = exchange();
    ex.set(WHO, 'client');
    const modifier = set([['requestHeaderModifier', { onRequest: (view) => void ((view.headers['x-added'] = 'yes'), delete view.headers['x-client'], view.set(WHO, 'target')) }]]);
    assert.equal(modifier.hasRequestHooks, true);
    const derived = await modifier.runRequestHooks(ex);
    assert.equal(derived.reply, undefined);
    assert.equal(derived.exchange.headers['x-added'], 'yes');
    assert.equal(derived.exchange.headers['x-client'], undefined);
    assert.equal(derived.exchange.get(WHO), 'target');
    assert.equal(ex.headers['x-added'], undefined);
    assert.equal(ex.headers['x-client'], 'c');
    assert.equal(ex.get(WHO), 'client');
    const denying = set([['deny', { onRequest: () => localReply(403, 'no') }, 'authz']]);
    assert.equal((await denying.runRequestHooks(ex)).reply?.status, 403);
  });

  it('a detached exchange keeps headers and attributes, has no request, and never aborts', () => {
    const ex = exchange();
    ex.set(WHO, 'client');
    const detached = ex.detach();
    ex.headers['x-later'] = 'after';
    ex.abort();
    assert.equal(detached.headers['x-client'], 'c');
    assert.equal(detached.headers['x-later'], undefined);
    assert.equal(detached.get(WHO), 'client');
    assert.equal(detached.signal.aborted, false);
    assert.equal(detached.path, '/mcp');
    assert.equal(detached.sourceAddress, '127.0.0.1');
    assert.throws(() => detached.req, /request of this exchange is over/);
  });
});
