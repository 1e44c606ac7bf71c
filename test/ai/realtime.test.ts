// WebSocket LLM APIs (OpenAI Realtime) pass through an `ai` backend to the provider, with the provider's header
// conventions and the route's backendAuth key.
import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { after, before, describe, it } from 'node:test';
import WebSocket from 'ws';
import { echoUpgrade, startWsProvider } from './ws-session.ts';
import type { WsProvider } from './ws-session.ts';
import { aiRoute, startAiGateway } from './harness.ts';
import { startGceMetadata } from '../helpers/gce-metadata.ts';
import type { GceMetadata } from '../helpers/gce-metadata.ts';
import type { AiGateway } from './harness.ts';

describe('ai backend: WebSocket upgrade', () => {
  let provider: WsProvider;
  let gw: AiGateway;
  let metadata: GceMetadata;

  before(async () => {
    provider = await startWsProvider();
    const port = provider.hostPort.split(':')[1];
    metadata = await startGceMetadata('ya29.live-token');
    const ws = { testAi: { routes: { '*': 'realtime' } } };
    gw = await startAiGateway([
      aiRoute('/rt', { name: 'rt', provider: { openAI: {} }, hostOverride: `127.0.0.1:${port}` }, { testAi: { routes: { '/v1/realtime': 'realtime' } }, backendAuth: { key: 'sk-realtime' } }),
      aiRoute('/az', { name: 'az', provider: { azureOpenAI: { host: 'my-res.openai.azure.com' } }, hostOverride: `127.0.0.1:${port}` }, { ...ws, backendAuth: { key: 'azure-operator-key' } }),
      aiRoute('/live', { name: 'live', provider: { gemini: {} }, hostOverride: `127.0.0.1:${port}` }, { ...ws, backendAuth: { key: 'AIzaOperator' } }),
      aiRoute('/vlive', { name: 'vlive', provider: { vertex: { projectId: 'p' } }, hostOverride: `127.0.0.1:${port}` }, ws),
    ]);
  });
  after(async () => {
    await gw?.stop();
    await metadata?.close();
    await provider?.close();
  });

  /** Opens a WebSocket through the gateway, exchanges one message, and returns the upgrade request the provider got. */
  const upgradeVia = async (path: string, headers: Record<string, string> = {}): Promise<IncomingMessage> => (await echoUpgrade(provider, `ws://127.0.0.1:${gw.port}${path}`, headers)).req;

  it('passes the upgrade through with the backendAuth key, browser headers stripped', async () => {
    const req = await upgradeVia('/rt/v1/realtime?model=gpt-realtime', { origin: 'https://app.example' });
    assert.equal(req.url, '/rt/v1/realtime?model=gpt-realtime');
    assert.equal(req.headers.authorization, 'Bearer sk-realtime');
    assert.equal(req.headers.origin, undefined);
  });

  it("keys an upgrade as its provider does after backendAuth: Azure's api-key, never the client's", async () => {
    let req = await upgradeVia('/az/openai/realtime?api-version=2025-04-01-preview&deployment=gpt-realtime', { 'api-key': 'client-own-key' });
    assert.equal(req.headers['api-key'], 'azure-operator-key');
    assert.equal(req.headers.authorization, undefined);
    // A browser's key in the query (Azure takes `api-key` there too) is moved out of the URL and replaced the same way.
    req = await upgradeVia('/az/openai/v1/realtime?model=gpt-realtime&api-key=client-own-key');
    assert.equal(req.headers['api-key'], 'azure-operator-key');
    assert.equal(req.url, '/az/openai/v1/realtime?model=gpt-realtime');
  });

  it("keys a Gemini Live upgrade with the operator's key in x-goog-api-key, the client's ?key= out of the URL", async () => {
    const req = await upgradeVia('/live/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent?key=AIzaClient');
    assert.equal(req.headers['x-goog-api-key'], 'AIzaOperator');
    assert.equal(req.headers.authorization, undefined);
    assert.equal(req.url, '/live/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent');
  });

  it("signs a Vertex upgrade with the provider's default credential (a Google access token), the client's key not beside it", async () => {
    const req = await upgradeVia('/vlive/ws/google.cloud.aiplatform.v1.LlmBidiService/BidiGenerateContent', { 'x-goog-api-key': 'AIzaClient' });
    assert.equal(req.headers.authorization, 'Bearer ya29.live-token');
    assert.equal(req.headers['x-goog-api-key'], undefined);
  });
});
