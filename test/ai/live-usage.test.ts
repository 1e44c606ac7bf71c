// A Gemini or Vertex Live session (`BidiGenerateContent` over WebSocket) is charged as it goes (ADR 0192), as an OpenAI
// Realtime session is (ADR 0190): the gateway reads the model from the client's `setup` (masked frames), and each
// server message's `usageMetadata` (the turn's usage, sent in binary frames as Google's servers do) is charged to the
// route's token limits and virtual keys, priced with audio at its own price; a limit used up ends the session with
// Close 1008. A real `ws` client against a small `ws` upstream speaking the Live API's message shapes: each
// `clientContent` turn is answered by a large audio chunk, then `turnComplete` with 100 prompt tokens (60 of them
// audio) and 50 response tokens (40 audio).
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { connect } from 'node:net';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import WebSocket, { WebSocketServer } from 'ws';
import { aiRoute, records, startAiGateway } from './harness.ts';
import { openWsSession } from './ws-session.ts';
import type { WsSession } from './ws-session.ts';
import type { AiGateway } from './harness.ts';
import { scrape, value } from '../helpers/metrics.ts';
import { wsFrame, wsMaskedFrame } from '../helpers/ws-frames.ts';

const LIVE = '/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent';
const VERTEX_LIVE = '/ws/google.cloud.aiplatform.v1beta1.LlmBidiService/BidiGenerateContent';
const USAGE = {
  promptTokenCount: 100,
  responseTokenCount: 50,
  totalTokenCount: 150,
  promptTokensDetails: [{ modality: 'TEXT', tokenCount: 40 }, { modality: 'AUDIO', tokenCount: 60 }],
  responseTokensDetails: [{ modality: 'AUDIO', tokenCount: 40 }, { modality: 'TEXT', tokenCount: 10 }],
};
const PRICES = { 'gemini-live-test': { input: 0.5, output: 2, audioInput: 3, audioOutput: 12 } };
/** One turn at PRICES: 40 text and 60 audio in, 10 text and 40 audio out. */
const TURN_USD = (40 * 0.5 + 60 * 3 + 10 * 2 + 40 * 12) / 1_000_000;
const LIVE_ROUTES = { testAi: { routes: { '*': 'passthrough' } } };

type Session = WsSession;

describe('Gemini Live sessions are charged as their turns end', () => {
  let server: Server;
  let wss: WebSocketServer;
  let gw: AiGateway;
  /** The setup messages the upstream got. */
  const setups: unknown[] = [];

  before(async () => {
    server = createServer();
    wss = new WebSocketServer({ server });
    wss.on('connection', (socket) => {
      socket.on('message', (data) => {
        const message = JSON.parse(data.toString()) as { setup?: unknown; clientContent?: unknown; usageFirst?: boolean };
        if (message.setup !== undefined) {
          setups.push(message.setup);
          socket.send(Buffer.from(JSON.stringify({ setupComplete: {} })), { binary: true });
          return;
        }
        if (message.clientContent === undefined) return;
        socket.send(Buffer.from(JSON.stringify({ serverContent: { modelTurn: { parts: [{ inlineData: { mimeType: 'audio/pcm;rate=24000', data: 'A'.repeat(100_000) } }] } } })), { binary: true });
        const done = Buffer.from(JSON.stringify({ serverContent: { turnComplete: true }, usageMetadata: USAGE }));
        // In two fragments, as binary.
        socket.send(done.subarray(0, 20), { binary: true, fin: false });
        socket.send(done.subarray(20), { binary: true, fin: true });
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const hostOverride = `127.0.0.1:${(server.address() as AddressInfo).port}`;
    const provider = { gemini: {} };
    const costs = { prices: PRICES };
    gw = await startAiGateway([
      aiRoute('/tok', { name: 'tok', provider, hostOverride, costs }, { ...LIVE_ROUTES, backendAuth: { key: 'gk-op' }, localRateLimit: [{ maxTokens: 400, tokensPerFill: 400, fillInterval: '1h', type: 'tokens' }] }),
      aiRoute('/lim', { name: 'lim', provider, hostOverride, costs }, { ...LIVE_ROUTES, backendAuth: { key: 'gk-op' }, localRateLimit: [{ maxTokens: 1_000_000, tokensPerFill: 1_000_000, fillInterval: '1h', type: 'tokens' }] }),
      aiRoute('/free', { name: 'free', provider, hostOverride, costs }, { ...LIVE_ROUTES, backendAuth: { key: 'gk-op' } }),
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

  const open = (path: string): Promise<Session> => openWsSession(`ws://127.0.0.1:${gw.port}${path}`, {}, () => ({ large: true }));
  const turns = (s: Session): number => s.messages.filter((m) => (m.serverContent as { turnComplete?: boolean } | undefined)?.turnComplete).length;
  /** Sends one turn and waits for its `turnComplete` (or for the session to close). */
  const turn = async (s: Session): Promise<void> => {
    const before = turns(s);
    s.ws.send(JSON.stringify({ clientContent: { turns: [{ role: 'user', parts: [{ text: 'hello' }] }], turnComplete: true } }));
    const deadline = Date.now() + 5000;
    while (turns(s) === before && s.ws.readyState === WebSocket.OPEN && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  };
  const setup = (s: Session, model: string): void => s.ws.send(JSON.stringify({ setup: { model, generationConfig: { responseModalities: ['AUDIO'] } } }));
  const line = async (path: string): Promise<Record<string, unknown> | undefined> => {
    for (let i = 0; i < 100; i++) {
      const found = records(gw).find((r) => r.msg === 'upgrade closed' && r['http.path'] === path);
      if (found) return found;
      await new Promise((r) => setTimeout(r, 20));
    }
    return undefined;
  };

  it('a token limit is charged each turn and closes the session once used up (Close 1008), priced by the setup model', async () => {
    const s = await open(`/tok${LIVE}`);
    setup(s, 'models/gemini-live-test');
    await turn(s);
    await turn(s);
    assert.equal(s.ws.readyState, WebSocket.OPEN, '300 of 400 tokens used: still open');
    await turn(s);
    const closed = await s.closed;
    assert.equal(closed.code, 1008);
    assert.match(closed.reason, /rate limit/i);
    assert.equal(turns(s), 3, 'the turn that used it up was relayed whole');
    assert.deepEqual(setups.at(-1), { model: 'models/gemini-live-test', generationConfig: { responseModalities: ['AUDIO'] } }, 'the setup went up unchanged');
    const logged = await line(`/tok${LIVE}`);
    assert.equal(logged?.['llm.inputTokens'], 300);
    assert.equal(logged?.['llm.outputTokens'], 150);
    assert.ok(Math.abs(Number(logged?.['llm.cost']) - 3 * TURN_USD) < 1e-9, `cost ${String(logged?.['llm.cost'])}`);
    assert.equal(logged?.['upgrade.close_cause'], 'llm_limit');
  });

  it("Vertex's Live path is metered alike; costs and tokens on /metrics agree with the catalog", async () => {
    const s = await open(`/free${VERTEX_LIVE}`);
    setup(s, 'projects/p/locations/us-central1/publishers/google/models/gemini-live-test');
    await turn(s);
    await turn(s);
    s.ws.close();
    await s.closed;
    const logged = await line(`/free${VERTEX_LIVE}`);
    assert.ok(Math.abs(Number(logged?.['llm.cost']) - 2 * TURN_USD) < 1e-9, `cost ${String(logged?.['llm.cost'])}`);
    const m = await scrape(gw);
    const labels = { provider: 'gcp.gemini', model: 'gemini-live-test' };
    assert.ok(Math.abs((value(m, 'switchyard_llm_cost_usd_total', labels) ?? 0) - 5 * TURN_USD) < 1e-9);
  });

  it('on a route with limits, a model without a price ends the session at its first usage (a USD budget would not see it)', async () => {
    const s = await open(`/lim${LIVE}`);
    setup(s, 'models/gemini-unpriced-live');
    await turn(s);
    const closed = await s.closed;
    assert.equal(closed.code, 1008);
    assert.match(closed.reason, /gemini-unpriced-live. has no price/);
    assert.equal(turns(s), 1, 'the turn was relayed whole');
    // Without limits it runs, unpriced (tokens counted, no cost).
    const free = await open(`/free${LIVE}`);
    setup(free, 'models/gemini-unpriced-live');
    await turn(free);
    await turn(free);
    assert.equal(free.ws.readyState, WebSocket.OPEN);
    free.ws.close();
    await free.closed;
  });

  it('usage before a setup named a model ends the session (it could not be priced)', async () => {
    const s = await open(`/lim${LIVE}`);
    // No setup: this upstream answers anyway, with usage.
    await turn(s);
    const closed = await s.closed;
    assert.equal(closed.code, 1008);
    assert.match(closed.reason, /setup/);
  });
});

// ADR 0192 review: the setup reader reads what the provider gets, in its order. A client's bytes sent after its
// request but before the provider's 101 (RFC 6455 forbids it; the kernel replays them) were not read, so a frame split
// across the switch could make the reader see a cheaper model than the provider ran; on unlimited routes an unread
// setup must not end the session either.
describe('Gemini Live: the setup is read from every byte the provider gets', () => {
  let server: Server;
  let gw: AiGateway;
  let upstreamGot = 0;
  const upgraded = new Set<import('node:stream').Duplex>();

  before(async () => {
    server = createServer();
    server.on('upgrade', (req, socket) => {
      upgraded.add(socket);
      // The 101 waits, so what the client sends meanwhile reaches the gateway before the switch.
      setTimeout(() => {
        const accept = createHash('sha1').update(`${req.headers['sec-websocket-key']}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`).digest('base64');
        socket.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`);
        let answered = false;
        socket.on('data', (chunk: Buffer) => {
          upstreamGot += chunk.length;
          if (answered) return;
          answered = true;
          socket.write(wsFrame(true, 2, Buffer.from(JSON.stringify({ serverContent: { turnComplete: true }, usageMetadata: USAGE }))));
        });
      }, 300);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const hostOverride = `127.0.0.1:${(server.address() as AddressInfo).port}`;
    const provider = { gemini: {} };
    const costs = { prices: PRICES };
    gw = await startAiGateway([
      aiRoute('/lim', { name: 'lim', provider, hostOverride, costs }, { ...LIVE_ROUTES, backendAuth: { key: 'gk-op' }, localRateLimit: [{ maxTokens: 1_000_000, tokensPerFill: 1_000_000, fillInterval: '1h', type: 'tokens' }] }),
      aiRoute('/free', { name: 'free', provider, hostOverride, costs }, { ...LIVE_ROUTES, backendAuth: { key: 'gk-op' } }),
    ]);
  });
  after(async () => {
    await gw?.stop();
    for (const socket of upgraded) socket.destroy();
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  });

  /** A raw client: the upgrade request, then (before the 101) a masked `setup` text frame; what comes back, as text. */
  async function earlySetup(path: string): Promise<string> {
    const socket = connect(gw.port, '127.0.0.1');
    let got = '';
    socket.on('data', (d: Buffer) => (got += d.toString('latin1')));
    socket.on('error', () => {});
    socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\n\r\n`);
    await new Promise((r) => setTimeout(r, 100));
    socket.write(wsMaskedFrame(true, 1, Buffer.from(JSON.stringify({ setup: { model: 'models/gemini-live-test' } })), randomBytes(4)));
    await new Promise((r) => setTimeout(r, 900));
    socket.destroy();
    return got;
  }

  it('a setup sent before the switch is read (it was not: the session ended at its first usage, unpriced)', async () => {
    const got = await earlySetup(`/lim${LIVE}`);
    assert.match(got, /^HTTP\/1.1 101/);
    assert.ok(got.includes('usageMetadata'), 'the usage reached the client');
    assert.ok(!got.includes('setup named a model'), `the session was not ended: ${JSON.stringify(got.slice(-200))}`);
    assert.ok(upstreamGot > 0, 'the early setup went up');
  });

  it('on a route without limits, usage the gateway cannot attribute passes (the session is not ended)', async () => {
    const socket = connect(gw.port, '127.0.0.1');
    let got = '';
    socket.on('data', (d: Buffer) => (got += d.toString('latin1')));
    socket.on('error', () => {});
    // No setup at all: the upstream answers the first bytes it gets (a ping frame) with usage.
    socket.write(`GET /free${LIVE} HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\n\r\n`);
    await new Promise((r) => setTimeout(r, 500));
    socket.write(Buffer.from([0x89, 0x80, 1, 2, 3, 4]));
    await new Promise((r) => setTimeout(r, 500));
    const open = !socket.destroyed && socket.readyState === 'open';
    socket.destroy();
    assert.ok(got.includes('usageMetadata'), 'the usage reached the client');
    assert.ok(open && !got.includes('setup named a model'), `the session was not ended: ${JSON.stringify(got.slice(-200))}`);
  });
});
