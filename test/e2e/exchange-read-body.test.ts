// `Exchange.readBodyInto` (ADR 0070): the SDK's body read without a promise, on the request's exchange and on the
// view a plugin's policy set derives from it. Two readers started before the body arrives and a `bufferBody` after
// all get the same bytes, which are kept (`ex.body`) and forwarded; past the limit the receiver gets the 413.
import assert from 'node:assert/strict';
import { AsyncLocalStorage } from 'node:async_hooks';
import { after, before, describe, it } from 'node:test';
import { request } from 'undici';
import { defineBackend, GatewayError, localReply } from 'switchyard/sdk';
import type { BodyReceiver, Exchange, PolicySet, Reply, UpstreamTarget } from 'switchyard/sdk';
import type { RoutesGateway } from '../helpers/gateway.ts';
import { modeBackendSchema, startModeGateway } from '../helpers/mode-backend.ts';
import type { ModeBackendConfig } from '../helpers/mode-backend.ts';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';

type ReadConfig = ModeBackendConfig<'twice' | 'view' | 'limit' | 'context'>;

/** A receiver as a promise, for the test's own bookkeeping. */
function receive(ex: Exchange, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const receiver: BodyReceiver = { bodyRead: resolve, bodyFailed: reject };
    ex.readBodyInto(limit, receiver);
  });
}

/** A plugin's own async context (as tracing's active span is): the receiver must run in the caller's. */
const pluginContext = new AsyncLocalStorage<string>();

const reader = defineBackend<ReadConfig>({
  key: 'testReadBodyInto',
  description: 'Test: reads the body with Exchange.readBodyInto, then forwards.',
  schema: modeBackendSchema(['twice', 'view', 'limit', 'context'], 'How the body is read.'),
  async compile(config, ctx) {
    const target: UpstreamTarget = ctx.http.target({ origin: `http://${config.host}` });
    const set: PolicySet = await ctx.compilePolicies('mcpTargetPolicies', config.policies, ['policies']);
    return {
      async handle(ex: Exchange): Promise<Reply> {
        if (config.mode === 'context') {
          const seen = await pluginContext.run(`request ${ex.headers['x-id']}`, () =>
            new Promise<string>((resolve) => ex.readBodyInto(1 << 20, { bodyRead: () => resolve(pluginContext.getStore() ?? 'none'), bodyFailed: () => resolve('failed') })),
          );
          return localReply(200, seen);
        }
        if (config.mode === 'limit') {
          try {
            await receive(ex, 10);
            return localReply(200, 'read');
          } catch (err) {
            assert.ok(err instanceof GatewayError);
            return localReply(err.status, err.type);
          }
        }
        const on = config.mode === 'view' ? (await set.runRequestHooks(ex)).exchange : ex;
        const [a, b] = await Promise.all([receive(on, 1 << 20), receive(on, 1 << 20)]);
        const c = await on.bufferBody();
        assert.ok(a === b && b === c && on.body === c, 'every reader gets the one body read, kept as ex.body');
        ex.headers['x-readers'] = '3';
        return target.forward(on);
      },
    };
  },
});

describe('Exchange.readBodyInto (ADR 0070)', () => {
  let gw: RoutesGateway;
  let port: number;
  let upstream: TestUpstream;
  before(async () => {
    upstream = await startUpstream();
    gw = await startModeGateway(reader, 'testReadBodyInto', upstream.port, [{ mode: 'twice' }, { mode: 'view', policies: { requestHeaderModifier: { set: { 'x-view': 'view' } } } }, { mode: 'limit' }, { mode: 'context' }]);
    port = gw.port;
  });
  after(async () => {
    await gw.stop();
    await upstream.close();
  });

  it('two readers and a bufferBody on the request exchange share one read, which is forwarded', async () => {
    const body = 'y'.repeat(200_000);
    const res = await request(`${gw.url(port)}/twice/a`, { method: 'POST', body, headers: { 'content-type': 'text/plain' } });
    const text = await res.body.text();
    assert.equal(res.statusCode, 200, text);
    const got = upstream.received.at(-1)!;
    assert.equal(got.body.toString(), body);
    assert.equal(got.headers['x-readers'], '3');
  });

  it('on a view, the body is read through it and forwarded with the view’s headers', async () => {
    const res = await request(`${gw.url(port)}/view/b`, { method: 'POST', body: 'view body' });
    const text = await res.body.text();
    assert.equal(res.statusCode, 200, text);
    const got = upstream.received.at(-1)!;
    assert.equal(got.body.toString(), 'view body');
    assert.equal(got.headers['x-view'], 'view');
  });

  it('past the limit the receiver gets the 413 bufferBody would reject with', async () => {
    const res = await request(`${gw.url(port)}/limit/c`, { method: 'POST', body: 'z'.repeat(100) });
    assert.equal(res.statusCode, 413);
    assert.equal(await res.body.text(), 'payload_too_large');
  });

  it('the receiver runs in the async context readBodyInto was called in, as a promise callback would', async () => {
    // A body that arrives after the call (a second write), so the read finishes from the socket's events.
    const res = await request(`${gw.url(port)}/context/d`, { method: 'POST', body: 'c'.repeat(300_000), headers: { 'x-id': '7' } });
    assert.equal(res.statusCode, 200);
    assert.equal(await res.body.text(), 'request 7');
  });
});
