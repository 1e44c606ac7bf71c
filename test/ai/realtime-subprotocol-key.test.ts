// Browser OpenAI Realtime clients cannot set headers on a WebSocket: they send their key as the subprotocol
// `openai-insecure-api-key.<key>`. apiKey and virtualKeys read it there; it never reaches the provider as it came
// (ADR 0195). A real WebSocket client (ws) offering the subprotocols a browser offers.
import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { after, before, describe, it } from 'node:test';
import WebSocket from 'ws';
import { aiRoute, startAiGateway } from './harness.ts';
import type { AiGateway } from './harness.ts';
import { echoUpgrade, startWsProvider } from './ws-session.ts';
import type { WsProvider } from './ws-session.ts';

const GW_KEY = 'sk-gateway-browser-key-0001';
const browserProtocols = (key: string): string[] => ['realtime', `openai-insecure-api-key.${key}`, 'openai-beta.realtime-v1'];

describe('ai backend: a browser Realtime key in the WebSocket subprotocol', () => {
  let provider: WsProvider;
  let gw: AiGateway;

  before(async () => {
    provider = await startWsProvider();
    const hostOverride = provider.hostPort;
    const rt = { testAi: { routes: { '/v1/realtime': 'realtime' } } };
    const ai = (name: string) => ({ name, provider: { openAI: {} }, hostOverride });
    gw = await startAiGateway([
      aiRoute('/ak', ai('ak'), { ...rt, apiKey: { mode: 'strict', keys: [{ key: GW_KEY }] }, backendAuth: { key: 'sk-provider' } }),
      aiRoute('/opt', ai('opt'), { ...rt, apiKey: { mode: 'optional', keys: [{ key: GW_KEY }] }, backendAuth: { key: 'sk-provider' } }),
      aiRoute('/perm', ai('perm'), { ...rt, apiKey: { mode: 'permissive', keys: [{ key: GW_KEY }] }, backendAuth: { key: 'sk-provider' } }),
      aiRoute('/vk', ai('vk'), { ...rt, virtualKeys: { store: { sqlite: { path: ':memory:' } }, keys: [{ id: 'browser', key: GW_KEY }] }, backendAuth: { key: 'sk-provider' } }),
      aiRoute('/open', ai('open'), rt),
    ]);
  });
  after(async () => {
    await gw?.stop();
    await provider?.close();
  });

  /** Opens the session as a browser would; the upgrade the provider got and the subprotocol the client was given. */
  const open = (prefix: string, key: string): Promise<{ req: IncomingMessage; protocol: string }> =>
    echoUpgrade(provider, `ws://127.0.0.1:${gw.port}${prefix}/v1/realtime?model=gpt-realtime`, {}, browserProtocols(key));

  /** The status a refused upgrade was answered with. */
  const refusal = (prefix: string, key: string): Promise<number> =>
    new Promise((resolve, reject) => {
      const ws = new WebSocket(`ws://127.0.0.1:${gw.port}${prefix}/v1/realtime?model=gpt-realtime`, browserProtocols(key));
      ws.once('unexpected-response', (_req, res) => {
        resolve(res.statusCode ?? 0);
        res.resume();
      });
      ws.once('open', () => reject(new Error('the upgrade was accepted')));
    });

  it('apiKey: the key is read from the subprotocol, which the provider never sees', async () => {
    const { req, protocol } = await open('/ak', GW_KEY);
    assert.equal(protocol, 'realtime');
    assert.equal(req.headers['sec-websocket-protocol'], 'realtime, openai-beta.realtime-v1');
    assert.equal(req.headers.authorization, 'Bearer sk-provider');
    assert.equal(await refusal('/ak', 'sk-wrong'), 401);
  });

  it('virtualKeys: the key is read from the subprotocol, which the provider never sees', async () => {
    const { req } = await open('/vk', GW_KEY);
    assert.equal(req.headers['sec-websocket-protocol'], 'realtime, openai-beta.realtime-v1');
    assert.equal(req.headers.authorization, 'Bearer sk-provider');
    assert.equal(await refusal('/vk', 'sk-wrong'), 401);
  });

  it('optional mode reads it too; a permissive route does not forward an unknown one', async () => {
    let { req } = await open('/opt', GW_KEY);
    assert.equal(req.headers['sec-websocket-protocol'], 'realtime, openai-beta.realtime-v1');
    assert.equal(req.headers.authorization, 'Bearer sk-provider');
    assert.equal(await refusal('/opt', 'sk-wrong'), 401);
    ({ req } = await open('/perm', 'sk-not-a-gateway-key'));
    assert.equal(req.headers['sec-websocket-protocol'], 'realtime, openai-beta.realtime-v1');
    assert.equal(req.headers.authorization, 'Bearer sk-provider');
  });

  it('a route that reads no key: the client\'s own key goes in the provider\'s header, not the subprotocol', async () => {
    const { req, protocol } = await open('/open', 'sk-client-own-openai-key');
    assert.equal(protocol, 'realtime');
    assert.equal(req.headers['sec-websocket-protocol'], 'realtime, openai-beta.realtime-v1');
    assert.equal(req.headers.authorization, 'Bearer sk-client-own-openai-key');
  });
});
