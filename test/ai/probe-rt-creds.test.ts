import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { IncomingMessage, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { WebSocketServer } from 'ws';
import { aiRoute, records, startAiGateway } from './harness.ts';
import { openWsSession } from './ws-session.ts';
import type { AiGateway } from './harness.ts';
import { testTempDir } from '../helpers/temp-dir.ts';

const KEY = 'sk-vk-probe-0123456789abcdef';
const LIVE = '/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent';
describe('probe', () => {
  let server: Server; let wss: WebSocketServer; let gw: AiGateway;
  const ups: IncomingMessage[] = [];
  before(async () => {
    server = createServer(); wss = new WebSocketServer({ server });
    wss.on('connection', (s, req) => { ups.push(req); s.send(JSON.stringify({ type: 'session.created', session: { model: 'gpt-realtime' } })); });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const hostOverride = `127.0.0.1:${(server.address() as AddressInfo).port}`;
    const dir = testTempDir('sa-');
    const virtualKeys = { store: { sqlite: { path: join(dir, 'k.db') } }, keys: [{ id: 'a', key: KEY, owner: 'o' }] };
    gw = await startAiGateway([
      aiRoute('/vk', { name: 'vk', provider: { openAI: {} }, hostOverride, costs: { prices: { 'gpt-realtime': { input: 1, output: 1 } } } }, { testAi: { routes: { '/realtime': 'realtime', '*': 'passthrough' } }, virtualKeys }),
      aiRoute('/gvk', { name: 'gvk', provider: { gemini: {} }, hostOverride, costs: { prices: { 'g': { input: 1, output: 1 } } } }, { testAi: { routes: { '*': 'passthrough' } }, virtualKeys, backendAuth: { key: 'gk-operator-secret-123456' } }),
    ]);
  });
  after(async () => { await gw?.stop(); wss?.close(); server.closeAllConnections(); server.close(); });
  it('openai realtime', async () => {
    const s = await openWsSession(`ws://127.0.0.1:${gw.port}/vk/v1/realtime?model=gpt-realtime`, { authorization: `Bearer ${KEY}`, cookie: 'c=1' }, () => ({}));
    await new Promise((r) => setTimeout(r, 200));
    s.ws.close(); await s.closed;
    console.log('UP', ups.at(-1)!.url, JSON.stringify(ups.at(-1)!.headers));
  });
  it('subprotocol key', async () => {
    const ws = new (await import('ws')).default(`ws://127.0.0.1:${gw.port}/vk/v1/realtime?model=gpt-realtime`, ['realtime', `openai-insecure-api-key.${KEY}`, 'openai-beta.realtime-v1']);
    const r = await new Promise((resolve) => { ws.once('open', () => resolve('open')); ws.once('unexpected-response', (_q, res) => resolve(res.statusCode)); ws.once('error', (e) => resolve(String(e))); });
    console.log('SUB', r, ups.length, JSON.stringify(ups.at(-1)?.headers));
    ws.terminate();
    await new Promise((r) => setTimeout(r, 300));
    const all = JSON.stringify(records(gw));
    console.log('LOGKEY', all.includes(KEY));
  });
  it('gemini live x-goog-api-key', async () => {
    const s = await openWsSession(`ws://127.0.0.1:${gw.port}/gvk${LIVE}`, { 'x-goog-api-key': KEY }, () => ({}));
    s.ws.send(JSON.stringify({ setup: { model: 'models/g' } }));
    await new Promise((r) => setTimeout(r, 200));
    s.ws.close(); await s.closed;
    console.log('UP', ups.at(-1)!.url, JSON.stringify(ups.at(-1)!.headers));
    const all = JSON.stringify(records(gw));
    console.log('LOGKEY', all.includes(KEY), all.includes('gk-operator'));
  });
});
