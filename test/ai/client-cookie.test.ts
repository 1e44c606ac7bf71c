// A client's cookies were presented to the gateway's own domain: an `ai` backend never sends them to the provider
// (translated, same-format, passthrough, WebSocket upgrades), unless a policy sets the header on purpose (ADR 0195).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { aiRoute, recordedAi, sdkClients, startAiGateway } from './harness.ts';
import type { AiGateway } from './harness.ts';
import { echoUpgrade, startWsProvider } from './ws-session.ts';
import type { WsProvider } from './ws-session.ts';

const COOKIE = 'session=browser-secret; csrf=abc';
const ROUTES = { testAi: { routes: { '/v1/chat/completions': 'completions', '/v1/messages': 'messages', '/v1/embeddings': 'passthrough' } } };

describe('ai backend: the client\'s Cookie never reaches the provider', () => {
  const t = recordedAi((hostPort) => [
    aiRoute('/oa', { name: 'oa', provider: { openAI: {} }, hostOverride: hostPort }, { ...ROUTES, backendAuth: { key: 'sk-op' } }),
    aiRoute('/an', { name: 'an', provider: { anthropic: {} }, hostOverride: hostPort }, { ...ROUTES, backendAuth: { key: 'sk-ant-op' } }),
    {
      name: 'asked',
      matches: [{ path: { pathPrefix: '/asked' } }],
      backends: [{ ai: { name: 'asked', provider: { openAI: {} }, hostOverride: hostPort }, policies: { requestHeaderModifier: { set: { cookie: 'provider-affinity=7' } } } }],
      policies: ROUTES,
    },
    {
      name: 'added',
      matches: [{ path: { pathPrefix: '/added' } }],
      backends: [{ ai: { name: 'added', provider: { openAI: {} }, hostOverride: hostPort }, policies: { requestHeaderModifier: { set: { 'x-tag': 'b' } } } }],
      policies: { ...ROUTES, requestHeaderModifier: { add: { cookie: 'provider-affinity=7' } } },
    },
  ]);
  const sdk = sdkClients(() => t.gw.base, 'sk-client');

  it('same format (Chat Completions to OpenAI): no Cookie upstream', async () => {
    await sdk.openai('/oa', 'sk-client', { defaultHeaders: { cookie: COOKIE } }).chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hello' }] });
    const wire = t.rec.last();
    assert.equal(wire.url, '/v1/chat/completions');
    assert.equal(wire.headers.cookie, undefined);
    assert.equal(wire.headers.authorization, 'Bearer sk-op');
  });

  it('translated (Chat Completions to Anthropic): no Cookie upstream', async () => {
    await sdk.openai('/an', 'sk-client', { defaultHeaders: { cookie: COOKIE } }).chat.completions.create({ model: 'claude-test-1', messages: [{ role: 'user', content: 'hello' }] });
    const wire = t.rec.last();
    assert.equal(wire.url, '/v1/messages');
    assert.equal(wire.headers.cookie, undefined);
  });

  it('passthrough: no Cookie upstream', async () => {
    const res = await fetch(`${t.gw.base}/oa/v1/embeddings`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', cookie: COOKIE },
      body: JSON.stringify({ model: 'text-embedding-3-small', input: 'hello' }),
    });
    assert.equal(res.status, 200);
    await res.arrayBuffer();
    const wire = t.rec.last();
    assert.equal(wire.url, '/oa/v1/embeddings');
    assert.equal(wire.headers.cookie, undefined);
  });

  it('a Cookie a policy sets on purpose (requestHeaderModifier on the backend) is sent', async () => {
    await sdk.openai('/asked', 'sk-client', { defaultHeaders: { cookie: COOKIE } }).chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hello' }] });
    assert.equal(t.rec.last().headers.cookie, 'provider-affinity=7');
    const res = await fetch(`${t.gw.base}/asked/v1/embeddings`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm', input: 'hello' }) });
    await res.arrayBuffer();
    assert.equal(t.rec.last().headers.cookie, 'provider-affinity=7', 'set even when the client sent none');
  });

  it('a route\'s modifier adding a Cookie is not hidden by the backend\'s editing another header', async () => {
    await sdk.openai('/added', 'sk-client', { defaultHeaders: { cookie: 'a=1' } }).chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hello' }] });
    const h = t.rec.last().headers;
    assert.equal(h['x-tag'], 'b');
    assert.equal(h.cookie, 'a=1; provider-affinity=7', '`add`: the client\'s cookies with the operator\'s');
  });
});

describe('ai backend: the client\'s Cookie never reaches the provider on a WebSocket upgrade', () => {
  let provider: WsProvider;
  let gw: AiGateway;

  before(async () => {
    provider = await startWsProvider();
    gw = await startAiGateway([aiRoute('/rt', { name: 'rt', provider: { openAI: {} }, hostOverride: provider.hostPort }, { testAi: { routes: { '/v1/realtime': 'realtime' } }, backendAuth: { key: 'sk-realtime' } })]);
  });
  after(async () => {
    await gw?.stop();
    await provider?.close();
  });

  it('drops the Cookie a browser sends with its upgrade', async () => {
    const { req } = await echoUpgrade(provider, `ws://127.0.0.1:${gw.port}/rt/v1/realtime?model=gpt-realtime`, { cookie: COOKIE });
    assert.equal(req.headers.cookie, undefined);
    assert.equal(req.headers.authorization, 'Bearer sk-realtime');
  });
});
