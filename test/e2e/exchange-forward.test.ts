// An exchange the SDK hands a plugin (the view `PolicySet.runRequestHooks` returns, a detached copy) can be
// forwarded with `UpstreamTarget.forward`, like the exchange the kernel made for the client request (ADR 0029).
// Before, `forward` cast whatever it got to the kernel's own class and failed with a 500 on anything else.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { request } from 'undici';
import { defineBackend } from 'switchyard/sdk';
import type { Exchange, PolicySet, UpstreamTarget } from 'switchyard/sdk';
import type { RoutesGateway } from '../helpers/gateway.ts';
import { modeBackendSchema, startModeGateway } from '../helpers/mode-backend.ts';
import type { ModeBackendConfig } from '../helpers/mode-backend.ts';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';

type ViewForwardConfig = ModeBackendConfig<'derived' | 'detached' | 'foreign'>;

/** An Exchange a plugin builds itself from the SDK interface alone (no kernel object behind it). */
function ownExchange(from: Exchange): Exchange {
  const attrs = new Map<string, unknown>();
  let body = from.body;
  const headers = { ...from.headers, 'x-own': 'plugin-made' };
  const own: Exchange = {
    req: from.req,
    method: from.method,
    path: `/own${from.path}`,
    query: from.query,
    authority: from.authority,
    hostname: from.hostname,
    scheme: from.scheme,
    headers,
    sourceAddress: from.sourceAddress,
    externalOrigin: from.externalOrigin,
    requestId: from.requestId,
    sourcePort: from.sourcePort,
    route: from.route,
    matchedPrefix: from.matchedPrefix,
    originalUrl: from.originalUrl,
    startTime: from.startTime,
    signal: from.signal,
    protocol: from.protocol,
    get body() {
      return body;
    },
    bufferBody: () => Promise.resolve(body ?? Buffer.alloc(0)),
    peekBody: () => Promise.resolve(body ?? Buffer.alloc(0)),
    copyBody: () => Promise.resolve(body ?? Buffer.alloc(0)),
    readBodyInto: (_limit, receiver) => receiver.bodyRead(body ?? Buffer.alloc(0)),
    setBody(b) {
      body = b;
      headers['content-length'] = String(b.length);
    },
    get: (key) => attrs.get(key.name) as never,
    set: (key, value) => void attrs.set(key.name, value),
    queueResponseHeader: () => undefined,
    logField: () => undefined,
    detach: () => own,
  };
  return own;
}

/** A third-party-style backend: runs its own policies on a view of the exchange, then forwards the view. */
const viewForward = defineBackend<ViewForwardConfig>({
  key: 'testViewForward',
  description: 'Test: forwards the exchange its own policy set derived, or a detached copy.',
  schema: modeBackendSchema(['derived', 'detached', 'foreign'], 'Which exchange to forward.'),
  async compile(config, ctx) {
    const target: UpstreamTarget = ctx.http.target({ origin: `http://${config.host}` });
    const set: PolicySet = await ctx.compilePolicies('mcpTargetPolicies', config.policies, ['policies']);
    return {
      async handle(ex: Exchange) {
        if (config.mode === 'foreign') {
          await ex.bufferBody();
          return target.forward(ownExchange(ex));
        }
        if (config.mode === 'detached') {
          await ex.bufferBody();
          return target.forward(ex.detach());
        }
        const derived = await set.runRequestHooks(ex);
        if (derived.reply) return derived.reply;
        return target.forward(derived.exchange);
      },
    };
  },
});

describe('forward() takes any exchange the SDK gives a plugin', () => {
  let gw: RoutesGateway;
  let port: number;
  let upstream: TestUpstream;
  before(async () => {
    upstream = await startUpstream();
    gw = await startModeGateway(viewForward, 'testViewForward', upstream.port, [
      { mode: 'derived', routePolicies: { requestHeaderModifier: { set: { 'x-route': 'route' } } }, policies: { requestHeaderModifier: { set: { 'x-view': 'view' } } } },
      { mode: 'detached' },
      { mode: 'foreign' },
    ]);
    port = gw.port;
  });
  after(async () => {
    await gw.stop();
    await upstream.close();
  });

  it('the view made by PolicySet.runRequestHooks is forwarded with its own headers and the streamed body', async () => {
    const body = 'x'.repeat(100_000);
    const res = await request(`${gw.url(port)}/derived/a?q=1`, { method: 'POST', body, headers: { 'content-type': 'text/plain', 'x-request-id': 'view-1' } });
    const text = await res.body.text();
    assert.equal(res.statusCode, 200, text);
    const got = upstream.received.at(-1)!;
    assert.equal(got.method, 'POST');
    assert.equal(got.url, '/derived/a?q=1');
    assert.equal(got.body.toString(), body);
    assert.equal(got.headers['x-view'], 'view', 'the view’s own header change goes upstream');
    assert.equal(got.headers['x-route'], 'route', 'the route’s change, made before the view, too');
    assert.equal(got.headers['x-request-id'], 'view-1');
    assert.equal(got.headers['x-forwarded-for'], '127.0.0.1');
    assert.equal(got.headers['x-forwarded-host'], `127.0.0.1:${port}`);
    assert.equal(got.headers.host, `127.0.0.1:${port}`, 'an IP-literal origin keeps the client’s Host');
  });

  it('a detached copy is forwarded with the body it kept', async () => {
    const res = await request(`${gw.url(port)}/detached/b`, { method: 'PUT', body: 'kept body', headers: { 'x-request-id': 'detached-1' } });
    const text = await res.body.text();
    assert.equal(res.statusCode, 200, text);
    const got = upstream.received.at(-1)!;
    assert.equal(got.method, 'PUT');
    assert.equal(got.url, '/detached/b');
    assert.equal(got.body.toString(), 'kept body');
    assert.equal(got.headers['x-request-id'], 'detached-1');
    assert.equal(got.headers['x-forwarded-for'], '127.0.0.1');
  });

  it('an exchange the plugin built itself is forwarded too, with what it says (no kernel state behind it)', async () => {
    const res = await request(`${gw.url(port)}/foreign/c?z=9`, { method: 'POST', body: 'own body', headers: { 'x-request-id': 'foreign-1' } });
    const text = await res.body.text();
    assert.equal(res.statusCode, 200, text);
    const got = upstream.received.at(-1)!;
    assert.equal(got.url, '/own/foreign/c?z=9');
    assert.equal(got.body.toString(), 'own body');
    assert.equal(got.headers['x-own'], 'plugin-made');
    assert.equal(got.headers['x-request-id'], 'foreign-1');
    assert.equal(got.headers['x-forwarded-for'], '127.0.0.1', 'the peer read from the public sourceAddress');
  });
});
