// A `realtime` WebSocket session is charged as it goes (ADR 0190): the gateway reads the provider's frames to the
// client (RFC 6455 framing, fragmented messages included), charges each `response.done` event's usage to the route's
// token limits, virtual keys, costs and metrics, and closes the session (an `error` event, then Close 1008) once a
// token limit or budget is used up. A real `ws` client against a small `ws` upstream speaking Realtime's event shapes:
// each `response.create` is answered by a large audio delta, then `response.done` with 100 input tokens (20 of them
// cached) and 50 output tokens.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { IncomingMessage, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import WebSocket, { WebSocketServer } from 'ws';
import { aiRoute, records, startAiGateway } from './harness.ts';
import { openWsSession } from './ws-session.ts';
import type { AiGateway } from './harness.ts';
import { testTempDir } from '../helpers/temp-dir.ts';
import { scrape, value } from '../helpers/metrics.ts';
import { startEnvoyServer } from '../helpers/envoy-grpc-servers.ts';
import { redisSkip, startRedis } from '../helpers/redis.ts';
import type { RunningRedis } from '../helpers/redis.ts';
import type { RateLimitRequestMessage, TestEnvoyServer } from '../helpers/envoy-grpc-servers.ts';

const USAGE = { total_tokens: 150, input_tokens: 100, output_tokens: 50, input_token_details: { cached_tokens: 20, text_tokens: 60, audio_tokens: 40 }, output_token_details: { text_tokens: 10, audio_tokens: 40 } };
const PRICES = { 'gpt-realtime': { input: 4, output: 16, cachedInput: 0.4 } };
/** What one response costs at PRICES: 80 uncached and 20 cached input tokens, 50 output tokens. */
const RESPONSE_USD = (80 * 4 + 20 * 0.4 + 50 * 16) / 1_000_000;
/**
 * A route whose URL model is priced as text only and whose dated model (the one `session.created` reports) has audio
 * prices: the session is priced by the reported model, audio at its audio prices (ADR 0192).
 */
const AUDIO_PRICES = { 'gpt-realtime-latest': { input: 4, output: 16, cachedInput: 0.4 }, 'gpt-realtime-2025-08-28': { input: 4, output: 16, cachedInput: 0.4, audioInput: 32, cachedAudioInput: 0.4, audioOutput: 64 } };
/** One response at the dated model's prices: 40 text and 40 audio input uncached, 20 cached text, 10 text and 40 audio out. */
const AUDIO_RESPONSE_USD = (40 * 4 + 40 * 32 + 20 * 0.4 + 10 * 16 + 40 * 64) / 1_000_000;
const REALTIME = { testAi: { routes: { '/realtime': 'realtime', '*': 'passthrough' } } };
const KEY = 'sk-rt-0123456789abcdefghij';
const MINI_KEY = 'sk-rt-mini-0123456789abcdef';
const USD_KEY = 'sk-rt-usd-0123456789abcdefg';
const REDIS_KEY = 'sk-rt-redis-0123456789abcde';

/** A session: the events it got (parsed), and how it closed. */
interface Session {
  ws: WebSocket;
  events: Record<string, unknown>[];
  closed: Promise<{ code: number; reason: string }>;
}

describe('realtime sessions are charged as their responses end', () => {
  let server: Server;
  let wss: WebSocketServer;
  let gw: AiGateway;
  let dir: string;
  let rls: TestEnvoyServer;
  let upstreamHost: string;
  /** Tokens the rate limit service counted (each call's descriptor hits, else the request's). */
  let rlsCount = 0;
  const upgrades: IncomingMessage[] = [];
  /** Resolved as each upstream session closes. */
  const upstreamClosed: Promise<void>[] = [];

  before(async () => {
    server = createServer();
    wss = new WebSocketServer({ server, perMessageDeflate: true });
    wss.on('connection', (socket, req) => {
      upgrades.push(req);
      upstreamClosed.push(new Promise((resolve) => socket.once('close', () => resolve())));
      socket.send(JSON.stringify({ type: 'session.created', event_id: 'ev_0', session: { id: 'sess_1', model: 'gpt-realtime-2025-08-28' } }));
      let n = 0;
      socket.on('message', (data) => {
        const event = JSON.parse(data.toString()) as { type: string };
        if (event.type !== 'response.create') return;
        n++;
        // A large delta (not read past its type), then response.done in three fragments.
        socket.send(JSON.stringify({ type: 'response.output_audio.delta', event_id: `ev_a${n}`, delta: 'A'.repeat(200_000) }));
        const done = Buffer.from(JSON.stringify({ type: 'response.done', event_id: `ev_d${n}`, response: { id: `resp_${n}`, object: 'realtime.response', status: 'completed', output: [], usage: USAGE } }));
        const third = Math.ceil(done.length / 3);
        socket.send(done.subarray(0, third), { fin: false, binary: false });
        socket.send(done.subarray(third, 2 * third), { fin: false, binary: false });
        socket.send(done.subarray(2 * third), { fin: true, binary: false });
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const hostOverride = `127.0.0.1:${(server.address() as AddressInfo).port}`;
    dir = testTempDir('switchyard-rt-');
    // A rate limit service with one 400-token limit: over once more than 400 were counted (Envoy's ratelimit).
    rls = await startEnvoyServer({
      ShouldRateLimit: (req: RateLimitRequestMessage) => {
        // uint32/uint64 fields may arrive as strings.
        const hits = Number((req.descriptors[0] as { hits_addend?: { value: number | string } } | undefined)?.hits_addend?.value ?? req.hits_addend);
        rlsCount += hits;
        const code = rlsCount > 400 ? 2 : 1;
        return { overall_code: code, statuses: [{ code, limit_remaining: Math.max(0, 400 - rlsCount) }], response_headers_to_add: [], request_headers_to_add: [], raw_body: Buffer.alloc(0) };
      },
    });
    const provider = { openAI: {} };
    const costs = { prices: PRICES };
    const virtualKeys = { store: { sqlite: { path: join(dir, 'keys.db') } }, keys: [
        { id: 'rt', key: KEY, owner: 'rt@example.com', budgets: [{ tokens: 400, period: 'day' }] },
        { id: 'usd', key: USD_KEY, owner: 'usd@example.com', budgets: [{ usd: 0.002, period: 'month' }] },
        { id: 'mini', key: MINI_KEY, owner: 'mini@example.com', models: ['gpt-4o-mini*'] },
      ] };
    upstreamHost = hostOverride;
    gw = await startAiGateway([
      aiRoute('/tok', { name: 'tok', provider, hostOverride, costs }, { ...REALTIME, backendAuth: { key: 'sk-op' }, localRateLimit: [{ maxTokens: 400, tokensPerFill: 400, fillInterval: '1h', type: 'tokens' }] }),
      aiRoute('/vk', { name: 'vk', provider, hostOverride, costs }, { ...REALTIME, virtualKeys }),
      aiRoute('/remote', { name: 'remote', provider, hostOverride, costs }, { ...REALTIME, backendAuth: { key: 'sk-op' }, remoteRateLimit: { host: `127.0.0.1:${rls.port}`, domain: 'rt', descriptors: [{ type: 'tokens', entries: [{ key: 'route', value: '"remote"' }] }] } }),
      aiRoute('/lim', { name: 'lim', provider, hostOverride, costs }, { ...REALTIME, backendAuth: { key: 'sk-op' }, localRateLimit: [{ maxTokens: 1_000_000, tokensPerFill: 1_000_000, fillInterval: '1h', type: 'tokens' }] }),
      aiRoute('/free', { name: 'free', provider, hostOverride, costs }, { ...REALTIME, backendAuth: { key: 'sk-op' } }),
      aiRoute('/audio', { name: 'audio', provider, hostOverride, costs: { prices: AUDIO_PRICES } }, { ...REALTIME, backendAuth: { key: 'sk-op' } }),
    ]);
  });
  after(async () => {
    await gw?.stop();
    await rls?.stop();
    wss?.close();
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
    rmSync(dir, { recursive: true, force: true });
  });

  const open = async (path: string, headers: Record<string, string> = {}, via: AiGateway = gw): Promise<Session> => {
    const s = await openWsSession(`ws://127.0.0.1:${via.port}${path}`, headers, (text) => ({ type: (JSON.parse(text) as { type: string }).type }));
    return { ws: s.ws, events: s.messages, closed: s.closed };
  };
  /** Asks for one response and waits for its `response.done` (or for the session to close). */
  const respond = async (s: Session): Promise<void> => {
    const before = s.events.filter((e) => e.type === 'response.done').length;
    s.ws.send(JSON.stringify({ type: 'response.create' }));
    const deadline = Date.now() + 5000;
    while (s.events.filter((e) => e.type === 'response.done').length === before && s.ws.readyState === WebSocket.OPEN && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  };
  /** The status a new session's handshake gets. */
  const handshake = (path: string, headers: Record<string, string> = {}, via: AiGateway = gw): Promise<number> =>
    new Promise((resolve, reject) => {
      const ws = new WebSocket(`ws://127.0.0.1:${via.port}${path}`, { headers });
      ws.once('open', () => {
        ws.close();
        resolve(101);
      });
      ws.once('unexpected-response', (_req, res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
        ws.terminate();
      });
      ws.once('error', (err) => (err.message.includes('Unexpected server response') ? undefined : reject(err)));
    });

  it('a token limit is charged each response.done and closes the session once used up (Close 1008, an error event first)', async () => {
    const s = await open('/tok/v1/realtime?model=gpt-realtime');
    await respond(s);
    await respond(s);
    assert.equal(s.ws.readyState, WebSocket.OPEN, '300 of 400 tokens used: still open');
    await respond(s);
    const closed = await s.closed;
    assert.equal(closed.code, 1008);
    assert.match(closed.reason, /rate limit/i);
    const error = s.events.find((e) => e.type === 'error') as { error: { type: string; message: string } } | undefined;
    assert.ok(error, 'an error event before the close');
    assert.equal(s.events.filter((e) => e.type === 'response.done').length, 3, 'the response that used it up was relayed whole');
    await upstreamClosed[upstreamClosed.length - 1];
    // The session's line: its tokens and cost, and why the gateway closed it.
    let line: Record<string, unknown> | undefined;
    for (let i = 0; i < 100 && !line; i++) {
      line = records(gw).find((r) => r.msg === 'upgrade closed' && r['http.path'] === '/tok/v1/realtime?model=gpt-realtime');
      if (!line) await new Promise((r) => setTimeout(r, 20));
    }
    assert.equal(line?.['llm.inputTokens'], 300);
    assert.equal(line?.['llm.outputTokens'], 150);
    assert.ok(Math.abs(Number(line?.['llm.cost']) - 3 * RESPONSE_USD) < 1e-9);
    assert.equal(line?.['upgrade.close_cause'], 'llm_limit');
    assert.equal(line?.['upgrade.closed_by'], 'gateway');
    assert.equal(line?.['websocket.close.code'], 1008);
    assert.equal(await handshake('/tok/v1/realtime?model=gpt-realtime'), 429);
  });

  it('a remote token limit is sent each response as hits, its refusal closing the session', async () => {
    const s = await open('/remote/v1/realtime?model=gpt-realtime');
    for (let i = 0; i < 3; i++) await respond(s);
    const closed = await s.closed;
    assert.equal(closed.code, 1008);
    assert.equal(rlsCount, 450, 'the handshake checked (0 hits), then 150 per response');
  });

  it('a virtual key budget is charged the same way, and a key over its budget cannot open a session', async () => {
    const auth = { authorization: `Bearer ${KEY}` };
    const s = await open('/vk/v1/realtime?model=gpt-realtime', auth);
    // The key is the gateway's, never the provider's (ADR 0015): the upgrade went up without it.
    assert.ok(!JSON.stringify(upgrades.at(-1)!.headers).includes(KEY), 'the virtual key did not reach the provider');
    for (let i = 0; i < 3; i++) await respond(s);
    const closed = await s.closed;
    assert.equal(closed.code, 1008);
    assert.match(closed.reason, /budget/i);
    assert.equal(await handshake('/vk/v1/realtime?model=gpt-realtime', auth), 429);
  });

  it('a key on a shared store (redis-server): charged per response, the session closed at its budget', { skip: redisSkip }, async () => {
    const redis: RunningRedis = await startRedis();
    const virtualKeys = { store: { redis: { url: redis.url, prefix: 'rt:' } }, keys: [{ id: 'rtr', key: REDIS_KEY, owner: 'r@example.com', budgets: [{ tokens: 400, period: 'day' }] }] };
    // Its own gateway: one key store per config; it serves no other session, so /metrics below is not moved.
    const own = await startAiGateway([aiRoute('/vkr', { name: 'vkr', provider: { openAI: {} }, hostOverride: upstreamHost }, { ...REALTIME, virtualKeys })]);
    try {
      const auth = { authorization: `Bearer ${REDIS_KEY}` };
      const s = await open('/vkr/v1/realtime?model=gpt-realtime', auth, own);
      await respond(s);
      await respond(s);
      assert.equal(s.ws.readyState, WebSocket.OPEN);
      await respond(s);
      const closed = await s.closed;
      assert.equal(closed.code, 1008);
      assert.match(closed.reason, /budget/);
      assert.equal(s.events.filter((e) => e.type === 'response.done').length, 3);
      assert.equal(await handshake('/vkr/v1/realtime?model=gpt-realtime', auth, own), 429);
    } finally {
      await own.stop();
      await redis.stop();
    }
  });

  it('a USD budget is charged each response at the catalog price (0.001128 USD each: closed after the second of 0.002)', async () => {
    const s = await open('/vk/v1/realtime?model=gpt-realtime', { authorization: `Bearer ${USD_KEY}` });
    await respond(s);
    assert.equal(s.ws.readyState, WebSocket.OPEN);
    await respond(s);
    const closed = await s.closed;
    assert.equal(closed.code, 1008);
    assert.match(closed.reason, /0\.002 USD per month/);
    const res = await fetch(`${gw.adminUrl}/keys/usd/usage`);
    const rows = ((await res.json()) as { usage: { scope: string; used: unknown }[] }).usage;
    assert.ok(Math.abs(Number(rows.find((r) => r.scope === 'key:usd')?.used) - 2 * RESPONSE_USD) < 1e-9);
  });

  it("a key not allowed the session's model cannot open one; a key revoked mid-session ends it at its next response", async () => {
    assert.equal(await handshake('/vk/v1/realtime?model=gpt-realtime', { authorization: `Bearer ${MINI_KEY}` }), 403);
    assert.equal(await handshake('/vk/v1/realtime', { authorization: `Bearer ${MINI_KEY}` }), 403, 'no model named: none the key may use');
    const made = await fetch(`${gw.adminUrl}/keys`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ owner: 'later@example.com' }) });
    const { secret, key } = (await made.json()) as { secret: string; key: { id: string } };
    const s = await open('/vk/v1/realtime?model=gpt-realtime', { authorization: `Bearer ${secret}` });
    await respond(s);
    assert.equal(s.ws.readyState, WebSocket.OPEN);
    assert.equal((await fetch(`${gw.adminUrl}/keys/${key.id}/revoke`, { method: 'POST' })).status, 200);
    await respond(s);
    const closed = await s.closed;
    assert.equal(closed.code, 1008);
    assert.equal((s.events.find((e) => e.type === 'error') as { error: { type: string } }).error.type, 'authentication_failed');
  });

  it('on a route with limits, what the gateway cannot meter is refused: other WebSocket APIs, credentials for direct sessions', async () => {
    // A WebSocket API whose usage is not read: a key's budget would not hold (Gemini Live is metered: live-usage.test.ts).
    assert.equal(await handshake('/lim/ws/other-api'), 403);
    assert.equal(await handshake('/vk/ws/other', { authorization: `Bearer ${MINI_KEY}` }), 403);
    // Ephemeral keys and WebRTC calls: the client then talks to the provider directly, past the gateway.
    for (const path of ['/v1/realtime/client_secrets', '/v1/realtime/sessions', '/v1/realtime/transcription_sessions', '/v1/realtime/calls']) {
      const res = await fetch(`http://127.0.0.1:${gw.port}/lim${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
      assert.equal(res.status, 403, path);
      const body = (await res.json()) as { error: { message: string } };
      assert.match(body.error.message, /outside the gateway|cannot be metered/, path);
    }
    // Without limits they pass.
    const other = await open('/free/ws/other-api');
    other.ws.close();
    await other.closed;
  });

  it('a session is priced by the model session.created reports, its audio tokens at the audio prices', async () => {
    const s = await open('/audio/v1/realtime?model=gpt-realtime-latest');
    await respond(s);
    await respond(s);
    s.ws.close();
    await s.closed;
    let line: Record<string, unknown> | undefined;
    for (let i = 0; i < 100 && !line; i++) {
      line = records(gw).find((r) => r.msg === 'upgrade closed' && r['http.path'] === '/audio/v1/realtime?model=gpt-realtime-latest');
      if (!line) await new Promise((r) => setTimeout(r, 20));
    }
    assert.ok(Math.abs(Number(line?.['llm.cost']) - 2 * AUDIO_RESPONSE_USD) < 1e-9, `cost ${String(line?.['llm.cost'])}`);
    assert.equal(line?.['llm.responseModel'], 'gpt-realtime-2025-08-28');
    const cost = value(await scrape(gw), 'switchyard_llm_cost_usd_total', { provider: 'openai', model: 'gpt-realtime-2025-08-28' }) ?? 0;
    assert.ok(Math.abs(cost - 2 * AUDIO_RESPONSE_USD) < 1e-9, `metrics cost ${cost}`);
  });

  it('costs and tokens on /metrics agree with the catalog; a metered session is offered no compression', async () => {
    const s = await open('/free/v1/realtime?model=gpt-realtime');
    await respond(s);
    await respond(s);
    assert.equal(s.ws.readyState, WebSocket.OPEN);
    s.ws.close();
    await s.closed;
    assert.equal(upgrades[upgrades.length - 1]!.headers['sec-websocket-extensions'], undefined);
    // Another WebSocket API on the route (not a realtime path) passes as bytes, its offer kept.
    const other = await open('/free/ws/other-api');
    other.ws.close();
    await other.closed;
    assert.match(String(upgrades[upgrades.length - 1]!.headers['sec-websocket-extensions']), /permessage-deflate/);
    const m = await scrape(gw);
    const labels = { provider: 'openai', model: 'gpt-realtime' };
    // 3 + 3 + 3 + 2 + 2 responses above, 2 here (the Redis key's on its own gateway).
    const responses = 15;
    assert.equal(value(m, 'switchyard_llm_tokens_total', { ...labels, type: 'input' }), 100 * responses);
    assert.equal(value(m, 'switchyard_llm_tokens_total', { ...labels, type: 'output' }), 50 * responses);
    const cost = value(m, 'switchyard_llm_cost_usd_total', labels) ?? 0;
    assert.ok(Math.abs(cost - responses * RESPONSE_USD) < 1e-9, `cost ${cost}`);
  });
});
