// WebSocket LLM APIs (OpenAI Realtime) pass through an `ai` backend to the provider, with the provider's header
// conventions and the route's backendAuth key.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { IncomingMessage, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import WebSocket, { WebSocketServer } from 'ws';
import { aiRoute, startAiGateway } from './harness.ts';
import type { AiGateway } from './harness.ts';

describe('ai backend: WebSocket upgrade', () => {
  let server: Server;
  let wss: WebSocketServer;
  let gw: AiGateway;
  const upgrades: IncomingMessage[] = [];

  before(async () => {
    server = createServer();
    wss = new WebSocketServer({ server });
    wss.on('connection', (socket, req) => {
      upgrades.push(req);
      socket.on('message', (data) => socket.send(`echo:${data.toString()}`));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    gw = await startAiGateway([
      aiRoute('/rt', { name: 'rt', provider: { openAI: {} }, hostOverride: `127.0.0.1:${port}` }, { testAi: { routes: { '/v1/realtime': 'realtime' } }, backendAuth: { key: 'sk-realtime' } }),
    ]);
  });
  after(async () => {
    await gw?.stop();
    wss?.close();
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  });

  it('passes the upgrade through with the backendAuth key, browser headers stripped', async () => {
    const ws = new WebSocket(`ws://127.0.0.1:${gw.port}/rt/v1/realtime?model=gpt-realtime`, { headers: { origin: 'https://app.example' } });
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    const reply = new Promise<string>((resolve) => ws.once('message', (d) => resolve(d.toString())));
    ws.send('session.update');
    assert.equal(await reply, 'echo:session.update');
    ws.close();
    const req = upgrades[upgrades.length - 1]!;
    assert.equal(req.url, '/rt/v1/realtime?model=gpt-realtime');
    assert.equal(req.headers.authorization, 'Bearer sk-realtime');
    assert.equal(req.headers.origin, undefined);
  });
});
