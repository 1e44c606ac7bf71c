// Resumable SSE streams (MCP "Resumability and Redelivery"): event ids on the gateway's GET and POST response
// streams, a bounded per-session event log, and `GET` + `Last-Event-ID` replaying what a dropped connection missed.
// The SDK v1 client reconnects by itself; a TCP proxy between it and the gateway drops the connection mid-stream.
import assert from 'node:assert/strict';
import { createServer, connect as netConnect } from 'node:net';
import type { Server, Socket } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { INIT, NODE, ROOT, connectClient, rawPost, startMcpGateway, waitFor } from './harness.ts';
import type { McpGateway } from './harness.ts';

const TICKER = join(ROOT, 'test/mcp/fixtures/ticker-server.ts');
const tickerStdio = (name = 'ticker'): Record<string, unknown> => ({ name, stdio: { cmd: NODE, args: [TICKER] } });

interface ProxiedConn {
  readonly client: Socket;
  readonly upstream: Socket;
  /** The latest request on the connection (head and body as sent so far). */
  last: string;
  /** Cut from the client: what the gateway sends is swallowed (a half-open connection). */
  dead: boolean;
}

/** A TCP proxy in front of the gateway that can cut chosen connections, as a network failure would. */
class DropProxy {
  readonly server: Server;
  readonly conns = new Set<ProxiedConn>();
  /** Request heads seen, in order. */
  readonly heads: string[] = [];
  /** SSE message events the gateway wrote to cut connections (lost in flight). */
  swallowed = 0;
  port = 0;

  constructor(target: number) {
    this.server = createServer((client) => {
      const upstream = netConnect(target, '127.0.0.1');
      const conn: ProxiedConn = { client, upstream, last: '', dead: false };
      this.conns.add(conn);
      client.on('data', (chunk: Buffer) => {
        const text = chunk.toString('latin1');
        if (/^(GET|POST|DELETE|PUT|OPTIONS) /.test(text)) {
          conn.last = text;
          this.heads.push(text.slice(0, text.indexOf('\r\n\r\n') + 1 || text.length));
        } else conn.last += text;
        upstream.write(chunk);
      });
      upstream.on('data', (chunk: Buffer) => {
        if (!conn.dead) client.write(chunk);
        else this.swallowed += chunk.toString('latin1').split('event: message').length - 1;
      });
      client.on('close', () => {
        this.conns.delete(conn);
        if (!conn.dead) upstream.destroy();
      });
      upstream.on('close', () => {
        this.conns.delete(conn);
        client.destroy();
      });
      client.on('error', () => undefined);
      upstream.on('error', () => undefined);
    });
  }

  async start(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as { port: number }).port;
  }

  /**
   * Cut every connection whose latest request matches, as a network failure does: the client sees its connection
   * end at once; the gateway's side stays open for `halfOpenMs` (what it writes meanwhile is lost), then closes.
   * Returns how many were cut.
   */
  drop(match: (request: string) => boolean, halfOpenMs: number): number {
    let n = 0;
    for (const c of [...this.conns]) {
      if (!match(c.last)) continue;
      n++;
      c.dead = true;
      c.client.destroy();
      setTimeout(() => c.upstream.destroy(), halfOpenMs).unref();
    }
    return n;
  }

  stop(): Promise<void> {
    for (const c of this.conns) {
      c.client.destroy();
      c.upstream.destroy();
    }
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

interface SseEvent {
  id?: string;
  data: string;
}

/** Read SSE events from a response body until `until` says stop or the body ends. */
async function readEvents(res: Response, until: (events: SseEvent[]) => boolean, ms = 10_000): Promise<SseEvent[]> {
  const events: SseEvent[] = [];
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  const deadline = Date.now() + ms;
  try {
    while (!until(events)) {
      if (Date.now() > deadline) throw new Error(`timed out reading SSE events (got ${JSON.stringify(events)})`);
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let cut: number;
      while ((cut = buffer.indexOf('\n\n')) !== -1) {
        const block = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        const event: SseEvent = { data: '' };
        let fields = 0;
        for (const line of block.split('\n')) {
          if (line.startsWith('id: ')) ((event.id = line.slice(4)), fields++);
          else if (line.startsWith('data: ')) ((event.data = line.slice(6)), fields++);
        }
        if (fields > 0) events.push(event);
      }
    }
  } finally {
    void reader.cancel().catch(() => undefined);
  }
  return events;
}

const range = (n: number, f: (i: number) => unknown): unknown[] => Array.from({ length: n }, (_, i) => f(i + 1));

describe('mcp SSE resumption with the SDK v1 client (Last-Event-ID)', () => {
  let gw: McpGateway;
  let proxy: DropProxy;
  before(async () => {
    gw = await startMcpGateway({ targets: [tickerStdio()] });
    proxy = new DropProxy(gw.port);
    await proxy.start();
  });
  after(async () => {
    await proxy?.stop();
    await gw?.stop();
  });

  it('a dropped GET stream is resumed: every notification arrives once, in order', async () => {
    const { client, transport } = await connectClient(new URL(`http://127.0.0.1:${proxy.port}/mcp`));
    const got: string[] = [];
    client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => void got.push(n.params.uri));
    try {
      await waitFor(() => proxy.heads.some((h) => h.startsWith('GET ')), 'the client to open its GET stream');
      const count = 60;
      await client.callTool({ name: 'ticks', arguments: { count, intervalMs: 30 } });
      await waitFor(() => got.length >= 10, 'the first notifications');
      // The gateway notices only after 3 s, long after the client reconnected (1 s): the notifications it wrote to
      // the dead connection meanwhile come back from the event log.
      assert.equal(
        proxy.drop((r) => r.startsWith('GET '), 3000),
        1,
        'the GET stream was cut',
      );
      await waitFor(() => got.length >= count, `all ${count} notifications (got ${got.length})`, 20_000);
      await new Promise((r) => setTimeout(r, 200));
      assert.deepEqual(got, range(count, (i) => `tick://${i}`));
      assert.ok(proxy.swallowed > 0, 'some notifications were lost in flight and came back from the event log');
      const resumes = proxy.heads.filter((h) => h.startsWith('GET ') && /\r\nlast-event-id: /i.test(h));
      assert.equal(resumes.length, 1, 'the client reconnected once, with Last-Event-ID');
      assert.match(resumes[0]!, /\r\nlast-event-id: [0-9a-f]{8}\.g_\d+\r\n/i);
    } finally {
      await transport.terminateSession();
      await client.close();
    }
  });

  it('a dropped POST response stream is resumed over GET: all progress, then the answer', async () => {
    const { client, transport } = await connectClient(new URL(`http://127.0.0.1:${proxy.port}/mcp`));
    const progress: number[] = [];
    try {
      const count = 40;
      const pending = client.callTool({ name: 'progress-ticks', arguments: { count, intervalMs: 30 } }, undefined, {
        onprogress: (p) => void progress.push(p.progress),
      });
      await waitFor(() => progress.length >= 8, 'the first progress notifications');
      assert.equal(
        proxy.drop((r) => r.startsWith('POST ') && r.includes('progress-ticks'), 3000),
        1,
        'the POST response stream was cut',
      );
      const swallowedBefore = proxy.swallowed;
      const result = await pending;
      assert.deepEqual(result.content, [{ type: 'text', text: `done ${count}` }]);
      assert.deepEqual(progress, range(count, (i) => i));
      assert.ok(proxy.swallowed > swallowedBefore, 'some progress was lost in flight and came back from the event log');
      const resumes = proxy.heads.filter((h) => h.startsWith('GET ') && /\r\nlast-event-id: [0-9a-f]{8}\.p\d+_\d+\r\n/i.test(h));
      assert.equal(resumes.length, 1, 'resumed with the POST stream’s last event id');
      assert.ok(!gw.logs.some((l) => l.includes('ticker: cancelled')), 'the call was not cancelled');
    } finally {
      await transport.terminateSession();
      await client.close();
    }
  });
});

describe('mcp SSE resumption: ids, unknown and finished streams, grace period', () => {
  let gw: McpGateway;
  let sessionId: string;
  const headers = (extra: Record<string, string> = {}): Record<string, string> => ({ 'mcp-session-id': sessionId, accept: 'text/event-stream', ...extra });
  before(async () => {
    gw = await startMcpGateway({ targets: [tickerStdio()] });
    const init = await rawPost(gw.mcpUrl, INIT());
    sessionId = init.headers.get('mcp-session-id')!;
  });
  after(() => gw?.stop());

  it('POST response streams start with a priming event (2025-11-25) and number their events', async () => {
    const res = await fetch(gw.mcpUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-session-id': sessionId },
      body: JSON.stringify({ jsonrpc: '2.0', id: 'p', method: 'tools/call', params: { name: 'progress-ticks', arguments: { count: 2, intervalMs: 5 }, _meta: { progressToken: 't' } } }),
    });
    const events = await readEvents(res, () => false);
    assert.equal(events.length, 4, JSON.stringify(events));
    const [priming, ...rest] = events;
    assert.equal(priming!.data, '', 'the priming event has empty data');
    const stream = priming!.id!.slice(0, priming!.id!.lastIndexOf('_'));
    assert.match(stream, /^[0-9a-f]{8}\.p\d+$/);
    assert.deepEqual(
      events.map((e) => e.id),
      [1, 2, 3, 4].map((n) => `${stream}_${n}`),
    );
    assert.deepEqual(JSON.parse(rest[2]!.data).id, 'p');
  });

  it('replays a finished POST stream after an id, answers 204 when nothing is left, and opens a fresh stream for an unknown id', async () => {
    const res = await fetch(gw.mcpUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-session-id': sessionId },
      body: JSON.stringify({ jsonrpc: '2.0', id: 'q', method: 'ping' }),
    });
    const events = await readEvents(res, () => false);
    assert.equal(events.length, 2);
    const replay = await fetch(gw.mcpUrl, { headers: headers({ 'last-event-id': events[0]!.id! }) });
    assert.equal(replay.status, 200);
    const replayed = await readEvents(replay, () => false);
    assert.deepEqual(replayed, [events[1]], 'the answer again, under its own id, then the end of the stream');
    const done = await fetch(gw.mcpUrl, { headers: headers({ 'last-event-id': events[1]!.id! }) });
    assert.equal(done.status, 204, 'the stream ended and the client has all of it');

    // An id this session never made (another replica's, or garbage): a fresh GET stream; a second one conflicts.
    const controller = new AbortController();
    const fresh = await fetch(gw.mcpUrl, { headers: headers({ 'last-event-id': 'deadbeef.g_7' }), signal: controller.signal });
    assert.equal(fresh.status, 200);
    assert.match(fresh.headers.get('content-type') ?? '', /text\/event-stream/);
    const second = await fetch(gw.mcpUrl, { headers: headers({ 'last-event-id': 'nonsense' }) });
    assert.equal(second.status, 409);
    controller.abort();
    await fresh.body?.cancel().catch(() => undefined);
  });

  it('resumes the GET stream after a raw reconnect: the events after the id, then live ones', async () => {
    // The previous test's GET stream closes asynchronously; until then a new one conflicts (409).
    let first: Response | undefined;
    await waitFor(async () => {
      const r = await fetch(gw.mcpUrl, { headers: headers() });
      if (r.status === 200) first = r;
      else await r.body?.cancel().catch(() => undefined);
      return first !== undefined;
    }, 'a GET stream');
    const call = (): Promise<unknown> => rawPost(gw.mcpUrl, JSON.stringify({ jsonrpc: '2.0', id: 'tick', method: 'tools/call', params: { name: 'ticks', arguments: { count: 6, intervalMs: 20 } } }), { 'mcp-session-id': sessionId });
    await call();
    // The priming event and the first three notifications, then the client "loses" the connection.
    const seen = await readEvents(first!, (ev) => ev.filter((e) => e.data !== '').length >= 3);
    const last = seen.at(-1)!;
    assert.match(last.id!, /^[0-9a-f]{8}\.g_\d+$/);
    await new Promise((r) => setTimeout(r, 300)); // the other three are sent meanwhile
    const again = await fetch(gw.mcpUrl, { headers: headers({ 'last-event-id': last.id! }) });
    assert.equal(again.status, 200, 'the resume replaces the old connection (no 409)');
    const rest = await readEvents(again, (ev) => ev.filter((e) => e.data !== '').length >= 3);
    const uris = (evs: SseEvent[]): string[] => evs.filter((e) => e.data !== '').map((e) => (JSON.parse(e.data) as { params: { uri: string } }).params.uri);
    assert.deepEqual([...uris(seen), ...uris(rest)], range(6, (i) => `tick://${i}`));
  });

  it('keeps a resumable call running after a disconnect, and cancels it when the client does not come back', async () => {
    const controller = new AbortController();
    const res = await fetch(gw.mcpUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-session-id': sessionId },
      body: JSON.stringify({ jsonrpc: '2.0', id: 'long', method: 'tools/call', params: { name: 'progress-ticks', arguments: { count: 400, intervalMs: 25 }, _meta: { progressToken: 'l' } } }),
      signal: controller.signal,
    });
    await readEvents(res, (ev) => ev.length >= 3);
    const cut = Date.now();
    controller.abort();
    await waitFor(() => gw.logs.some((l) => l.includes('ticker: cancelled')), 'the call to be cancelled after the grace period', 15_000);
    assert.ok(Date.now() - cut >= 4500, 'not before the grace period');
  });
});
