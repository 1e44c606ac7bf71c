import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import type { IncomingMessage } from 'node:http';
import { describe, it } from 'node:test';
import { defineAttribute } from '../sdk/index.ts';
import type { Exchange } from '../sdk/index.ts';
import { ExchangeImpl } from '../runtime/exchange-impl.ts';
import { ExchangeView } from './exchange-view.ts';
import { exchangeAttributes, exchangeState } from './kernel-exchange.ts';
import type { UpstreamPlan } from './upstream-plan.ts';

function exchange(): ExchangeImpl {
  const socket = Object.assign(new EventEmitter(), { remoteAddress: '::ffff:10.0.0.7', remotePort: 5000 });
  const req = Object.assign(new EventEmitter(), { method: 'POST', url: '/a', headers: { host: 'gw.example' }, rawHeaders: ['Host', 'gw.example'], socket }) as unknown as IncomingMessage;
  return new ExchangeImpl(req, undefined, 'http', 'gw.example', '/a', '', 0);
}

const role = defineAttribute<string>('role');

describe('the kernel-state handle (ADR 0029)', () => {
  it('the request’s exchange is its own state; a live view shares it', () => {
    const ex = exchange();
    assert.equal(exchangeState(ex), ex);
    const view = new ExchangeView(ex, true);
    assert.equal(exchangeState(view), ex);
    assert.equal(exchangeState(new ExchangeView(view, true)), ex, 'a view of a view reaches the request');
  });

  it('a detached copy has its own state, with the request’s plan and client address, never aborted', () => {
    const ex = exchange();
    const plan: UpstreamPlan = { attemptTimeoutMs: 5, headersTimeoutMs: 0, idleTimeoutMs: 0, retry: null, upstreamHooks: null };
    ex.plan = plan;
    ex.attempts = 2;
    const copy = ex.detach();
    const state = exchangeState(copy)!;
    assert.notEqual(state, ex);
    assert.equal(state.plan, plan);
    assert.equal(state.peerAddress, '10.0.0.7');
    assert.equal(state.clientAuthority, 'gw.example');
    assert.equal(state.attempts, 0);
    ex.abort(new Error('gone'));
    assert.equal(state.aborted, undefined);
  });

  it('attributes: each view has its own copy; an object a plugin made has no kernel state', () => {
    const ex = exchange();
    ex.set(role, 'admin');
    const view = new ExchangeView(ex, true);
    view.set(role, 'reader');
    assert.equal(exchangeAttributes(ex)?.get('role'), 'admin');
    assert.equal(exchangeAttributes(view)?.get('role'), 'reader');
    const foreign = { ...view, attributes: () => new Map([['role', 'forged']]) } as unknown as Exchange;
    assert.equal(exchangeState(foreign), undefined);
    assert.equal(exchangeAttributes(foreign), undefined, 'a look-alike object is not read as a kernel exchange');
  });
});
