// The lean streamable-HTTP client against a real SDK v1 server (StreamableHTTPServerTransport, stateful): JSON and SSE
// answers, the session id, the GET stream and its reconnection with Last-Event-ID, a POST stream resumed over GET,
// session loss as `code: 404`, DELETE on close (not on detach), resuming a session, broken streams, and the
// connection's headers and per-request hook on every request.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { IncomingHttpHeaders, IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { EventStore } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { Pool } from 'undici';
import { z } from 'zod';
import type { UpstreamAttempt, UpstreamCallOptions, UpstreamResponse, UpstreamTarget } from 'switchyard/sdk';
import { completeUtf8 } from 'switchyard/sdk';
import { StreamableUpstream } from './streamable-upstream.ts';
import type { ReconnectOptions } from './streamable-upstream.ts';

const FAST: ReconnectOptions = { initialDelayMs: 30, maxDelayMs: 200, growFactor: 1.5, maxRetries: 3 };
const VERSION = '2025-11-25';

/** An UpstreamTarget over an undici pool, as the kernel's (Host, onAttempt, signal, timeoutMs). */
function poolTarget(origin: string): UpstreamTarget & { close(): Promise<void> } {
  const pool = new Pool(origin);
  const host = new URL(origin).host;
  return {
    origin,
    forward: () => Promise.reject(new Error('not used')),
    upgrade: () => undefined,
    async request(o: UpstreamCallOptions): Promise<UpstreamResponse> {
      const headers = { ...(o.headers as Record<string, string>), host };
      await o.onAttempt?.({ method: o.method, path: o.path, origin, headers, body: undefined, attempt: 0 });
      const signals = [o.signal, o.timeoutMs ? AbortSignal.timeout(o.timeoutMs) : undefined].filter((s): s is AbortSignal => s !== undefined);
      const r = await pool.request({
        path: o.path,
        method: o.method as 'GET',
        headers,
        body: (o.body ?? null) as string | null,
        signal: signals.length ? AbortSignal.any(signals) : undefined,
      });
      return { status: r.statusCode, headers: r.headers as IncomingHttpHeaders, body: r.body };
    },
    close: () => pool.close(),
  };
}

/** An SDK server with `options` and a pool target on it, started before the enclosing suite's tests, stopped after. */
function serverWithTarget(options: ConstructorParameters<typeof SdkServer>[0]): { readonly server: SdkServer; readonly target: ReturnType<typeof poolTarget> } {
  const server = new SdkServer(options);
  const fixture = { server, target: undefined as unknown as ReturnType<typeof poolTarget> };
  before(async () => {
    await server.start();
    fixture.target = poolTarget(`http://127.0.0.1:${server.port}`);
  });
  after(async () => {
    await fixture.target.close();
    await server.stop();
  });
  return fixture;
}

/** A plain HTTP server answering with `handle` and a pool target on it, started before the suite's tests, stopped after. */
function rawServerWithTarget(handle: (req: IncomingMessage, res: ServerResponse) => void): { readonly target: ReturnType<typeof poolTarget> } {
  const fixture = { target: undefined as unknown as ReturnType<typeof poolTarget> };
  let http: Server;
  before(async () => {
    http = createServer(handle);
    await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
    fixture.target = poolTarget(`http://127.0.0.1:${(http.address() as AddressInfo).port}`);
  });
  after(async () => {
    await fixture.target.close();
    http.closeAllConnections();
    await new Promise<void>((r) => http.close(() => r()));
  });
  return fixture;
}

interface Received {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
}

/**
 * An event store for the SDK server. (The SDK's example InMemoryEventStore reads the stream id back from an event id
 * by splitting at `_`, which breaks on the standalone stream's own id, `_GET_stream`: it cannot replay that stream.)
 */
function eventStore(): EventStore {
  const events: { id: string; stream: string; message: JSONRPCMessage }[] = [];
  return {
    async storeEvent(stream, message) {
      const id = `${stream}#${events.length}`;
      events.push({ id, stream, message });
      return id;
    },
    async getStreamIdForEventId(id) {
      return events.find((e) => e.id === id)?.stream;
    },
    async replayEventsAfter(lastEventId, { send }) {
      const at = events.findIndex((e) => e.id === lastEventId);
      const stream = events[at]!.stream;
      // Priming events are stored as `{}`: not sent again.
      for (const e of events.slice(at + 1)) if (e.stream === stream && 'jsonrpc' in e.message) await send(e.id, e.message);
      return stream;
    },
  };
}

/** An SDK v1 server, one transport and McpServer per session as in the SDK's examples. */
class SdkServer {
  readonly received: Received[] = [];
  readonly transports = new Map<string, StreamableHTTPServerTransport>();
  readonly servers = new Map<string, McpServer>();
  private http!: Server;
  port = 0;
  private readonly options: { json?: boolean; resumable?: boolean; redirect?: boolean };

  constructor(options: { json?: boolean; resumable?: boolean; redirect?: boolean }) {
    this.options = options;
  }

  private mcpServer(): McpServer {
    const server = new McpServer({ name: 'test-upstream', version: '1.0.0' }, { capabilities: { logging: {} } });
    server.registerTool('echo', { inputSchema: { text: z.string() } }, ({ text }) => ({ content: [{ type: 'text', text: `echo: ${text}` }] }));
    server.registerTool('chatty', { inputSchema: {} }, async (_args, extra) => {
      await extra.sendNotification({ method: 'notifications/message', params: { level: 'info', data: 'working' } });
      return { content: [{ type: 'text', text: 'done' }] };
    });
    // Closes its POST stream right away (SEP-1699 polling) and answers later: the client resumes over GET.
    server.registerTool('polled', { inputSchema: {} }, async (_args, extra) => {
      extra.closeSSEStream?.();
      await new Promise((r) => setTimeout(r, 150));
      return { content: [{ type: 'text', text: 'after the resume' }] };
    });
    return server;
  }

  async start(): Promise<void> {
    this.http = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((r) => this.http.listen(0, '127.0.0.1', r));
    this.port = (this.http.address() as AddressInfo).port;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    this.received.push({ method: req.method!, url: req.url!, headers: req.headers });
    // Mounted at `/mcp/`, as some frameworks do: `/mcp` is redirected there.
    if (this.options.redirect && req.url === '/mcp') return void res.writeHead(307, { location: '/mcp/' }).end();
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = chunks.length ? (JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown) : undefined;
    const sid = req.headers['mcp-session-id'];
    let transport = typeof sid === 'string' ? this.transports.get(sid) : undefined;
    if (!transport) {
      if (sid !== undefined) {
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32001, message: 'Session not found' } }));
        return;
      }
      if (req.method !== 'POST' || !isInitializeRequest(body)) {
        res.writeHead(400, { 'content-type': 'application/json' }).end('{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"No valid session ID provided"}}');
        return;
      }
      const server = this.mcpServer();
      const created: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        enableJsonResponse: this.options.json === true,
        eventStore: this.options.resumable ? eventStore() : undefined,
        retryInterval: this.options.resumable ? 40 : undefined,
        onsessioninitialized: (id) => {
          this.transports.set(id, created);
          this.servers.set(id, server);
        },
      });
      created.onclose = () => {
        if (created.sessionId) this.transports.delete(created.sessionId);
      };
      await server.connect(created);
      transport = created;
    }
    await transport.handleRequest(req, res, body);
  }

  requests(method: string): Received[] {
    return this.received.filter((r) => r.method === method);
  }

  async stop(): Promise<void> {
    for (const t of this.transports.values()) await t.close().catch(() => undefined);
    this.http.closeAllConnections();
    await new Promise<void>((r) => this.http.close(() => r()));
  }
}

async function waitFor(check: () => boolean, what: string, ms = 5000): Promise<void> {
  const until = Date.now() + ms;
  while (!check()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** A client with its received messages and errors, and the hook calls it made. */
function client(target: UpstreamTarget, extra: { resumeSessionId?: string } = {}) {
  const messages: Record<string, unknown>[] = [];
  const errors: Error[] = [];
  const attempts: UpstreamAttempt[] = [];
  let closed = 0;
  const up = new StreamableUpstream(
    target,
    '/mcp',
    {
      headers: { 'x-client': 'yes' },
      onAttempt: (a) => void attempts.push(a),
      logger: undefined as never,
      resumeSessionId: extra.resumeSessionId,
    },
    FAST,
  );
  up.onmessage = (m) => void messages.push(m as Record<string, unknown>);
  up.onerror = (e) => void errors.push(e);
  up.onclose = () => void closed++;
  const answer = async (id: number, timeout = 5000): Promise<Record<string, unknown>> => {
    await waitFor(() => messages.some((m) => m.id === id && m.method === undefined), `the answer to ${id}`, timeout);
    return messages.find((m) => m.id === id && m.method === undefined)!;
  };
  const initialize = async (): Promise<void> => {
    await up.start();
    await up.send({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: VERSION, capabilities: {}, clientInfo: { name: 't', version: '1' } } });
    const init = await answer(0);
    up.setProtocolVersion((init.result as { protocolVersion: string }).protocolVersion);
    await up.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  };
  const call = async (id: number, name: string, args: Record<string, unknown> = {}): Promise<Record<string, unknown>> => {
    await up.send({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } } as JSONRPCMessage);
    return answer(id);
  };
  return { up, messages, errors, attempts, closed: () => closed, initialize, call, answer };
}

const text = (answer: Record<string, unknown>): string => ((answer.result as { content: { text: string }[] }).content[0]!).text;

for (const mode of ['SSE', 'JSON'] as const) {
  describe(`StreamableUpstream against the SDK v1 server (${mode} answers)`, () => {
    const fixture = serverWithTarget({ json: mode === 'JSON' });
    const server = fixture.server;

    it('initializes, keeps the session id and protocol version, opens the GET stream and calls tools', async () => {
      server.received.length = 0;
      const c = client(fixture.target);
      await c.initialize();
      assert.ok(c.up.sessionId && server.transports.has(c.up.sessionId));
      assert.equal(text(await c.call(1, 'echo', { text: 'hi' })), 'echo: hi');
      await waitFor(() => server.requests('GET').length === 1, 'the GET stream');
      const posts = server.requests('POST');
      assert.equal(posts[0]!.headers['mcp-session-id'], undefined);
      for (const r of posts.slice(1)) {
        assert.equal(r.headers['mcp-session-id'], c.up.sessionId);
        assert.equal(r.headers['mcp-protocol-version'], VERSION);
        assert.equal(r.headers.accept, 'application/json, text/event-stream');
        assert.equal(r.headers['content-type'], 'application/json');
      }
      assert.equal(server.requests('GET')[0]!.headers.accept, 'text/event-stream');
      // The client's headers and the per-request hook (backendAuth) on every request, the GET stream included.
      for (const r of server.received) assert.equal(r.headers['x-client'], 'yes');
      assert.equal(c.attempts.length, server.received.length);
      assert.deepEqual(c.errors, []);
      await c.up.close();
    });

    it('relays messages sent while a call runs, then its answer', async () => {
      const c = client(fixture.target);
      await c.initialize();
      assert.equal(text(await c.call(2, 'chatty')), 'done');
      // In JSON mode the SDK server sends request-related notifications nowhere (no stream); in SSE mode before the answer.
      const note = c.messages.findIndex((m) => m.method === 'notifications/message');
      if (mode === 'SSE') assert.ok(note !== -1 && note < c.messages.findIndex((m) => m.id === 2));
      await c.up.close();
    });

    it('reports a lost upstream session as code 404 naming the status and the body', async () => {
      const c = client(fixture.target);
      await c.initialize();
      await server.transports.get(c.up.sessionId!)!.close();
      await assert.rejects(c.up.send({ jsonrpc: '2.0', id: 3, method: 'tools/list' }), (err: Error & { code?: unknown }) => {
        assert.equal(err.code, 404);
        assert.match(err.message, /HTTP 404 Not Found/);
        assert.match(err.message, /Session not found/);
        return true;
      });
      assert.equal(c.errors.length > 0, true, 'onerror heard it too');
      await c.up.detach();
    });

    it('ends the upstream session with DELETE on close, and not on detach', async () => {
      const a = client(fixture.target);
      await a.initialize();
      const id = a.up.sessionId!;
      await a.up.close();
      const deletes = server.requests('DELETE').filter((r) => r.headers['mcp-session-id'] === id);
      assert.equal(deletes.length, 1);
      assert.equal(deletes[0]!.headers['x-client'], 'yes');
      assert.equal(server.transports.has(id), false);
      assert.equal(a.closed(), 1);
      await assert.rejects(a.up.send({ jsonrpc: '2.0', method: 'notifications/initialized' }), /closed/);

      const b = client(fixture.target);
      await b.initialize();
      const kept = b.up.sessionId!;
      await b.up.detach();
      assert.equal(server.requests('DELETE').filter((r) => r.headers['mcp-session-id'] === kept).length, 0);
      assert.equal(server.transports.has(kept), true);
      assert.equal(b.closed(), 1);

      // Resuming it: the GET stream opens at start, and requests work without initialize.
      const before = server.requests('GET').length;
      const r = client(fixture.target, { resumeSessionId: kept });
      r.up.setProtocolVersion(VERSION);
      await r.up.start();
      assert.equal(server.requests('GET').length, before + 1);
      assert.equal(text(await r.call(4, 'echo', { text: 'again' })), 'echo: again');
      await r.up.close();
      // A session that is gone: start throws the 404 so the caller initializes a new one.
      const gone = client(fixture.target, { resumeSessionId: kept });
      await assert.rejects(gone.up.start(), (err: Error & { code?: unknown }) => err.code === 404);
      await gone.up.close();
    });
  });
}

describe('StreamableUpstream: a target that redirects within its origin', () => {
  const fixture = serverWithTarget({ redirect: true });
  const server = fixture.server;

  it('follows 307 to the endpoint for POST, GET and DELETE, as the SDK client does', async () => {
    const c = client(fixture.target);
    await c.initialize();
    assert.equal(text(await c.call(1, 'echo', { text: 'moved' })), 'echo: moved');
    await waitFor(() => server.received.some((r) => r.method === 'GET' && r.url === '/mcp/'), 'the GET stream');
    const id = c.up.sessionId!;
    await c.up.close();
    for (const method of ['POST', 'GET', 'DELETE']) {
      const seen = server.requests(method);
      assert.ok(seen.some((r) => r.url === '/mcp') && seen.some((r) => r.url === '/mcp/'), `${method} redirected and followed`);
    }
    assert.equal(server.transports.has(id), false, 'the DELETE reached the session');
    assert.deepEqual(c.errors, []);
  });
});

describe('StreamableUpstream: resumable streams (SDK v1 server with an event store)', () => {
  const fixture = serverWithTarget({ resumable: true });
  const server = fixture.server;

  it('reopens the GET stream after it drops, with Last-Event-ID, and gets what was sent meanwhile', async () => {
    const c = client(fixture.target);
    await c.initialize();
    const sid = c.up.sessionId!;
    await waitFor(() => server.requests('GET').length === 1, 'the GET stream');
    const mcp = server.servers.get(sid)!;
    const log = (data: string): Promise<void> => mcp.server.notification({ method: 'notifications/message', params: { level: 'info', data } });
    const logged = (): unknown[] => c.messages.filter((m) => m.method === 'notifications/message').map((m) => (m.params as { data: unknown }).data);
    // The stream is open once the server holds it; a message sent before would be kept for a replay only.
    await waitFor(() => (server.transports.get(sid) as unknown as { _webStandardTransport: { _streamMapping: Map<string, unknown> } })._webStandardTransport._streamMapping.has('_GET_stream'), 'the server side of the GET stream');
    await log('one');
    await waitFor(() => logged().length === 1, 'the first message');
    server.transports.get(sid)!.closeStandaloneSSEStream();
    await log('two'); // while the client is away: kept in the event store
    await waitFor(() => logged().length === 2, 'the replayed message');
    await log('three');
    await waitFor(() => logged().length === 3, 'a live message on the reopened stream');
    assert.deepEqual(logged(), ['one', 'two', 'three']);
    const gets = server.requests('GET');
    assert.equal(gets.length, 2);
    assert.equal(gets[0]!.headers['last-event-id'], undefined);
    assert.ok(gets[1]!.headers['last-event-id'], 'the reconnect carries Last-Event-ID');
    await c.up.close();
  });

  it('resumes a POST stream the server closed before the answer (GET with its last event id)', async () => {
    const c = client(fixture.target);
    await c.initialize();
    const gets = server.requests('GET').length;
    assert.equal(text(await c.call(5, 'polled')), 'after the resume');
    assert.ok(server.requests('GET').slice(gets).some((r) => r.headers['last-event-id']), 'resumed with Last-Event-ID');
    await c.up.close();
  });
});

describe('StreamableUpstream: an answer nobody reads that never ends (ADR 0168)', () => {
  // The body of an answer the client does not read (a notification's) was drained for as long as it came: a target
  // that answered with an endless body kept the gateway reading it at full speed until the session closed.
  let written = 0;
  let closed = 0;
  const fixture = rawServerWithTarget((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      const block = Buffer.alloc(64 * 1024, 0x78);
      const more = (): void => {
        while (!res.destroyed && res.write(block)) written += block.length;
      };
      res.on('drain', more);
      res.on('close', () => closed++);
      more();
    });
  });

  it('reads a little of a notification\'s endless answer, then lets the connection go', async () => {
    const c = client(fixture.target);
    await c.up.send({ jsonrpc: '2.0', method: 'notifications/roots/list_changed' });
    await waitFor(() => closed === 1, 'the answer to be let go', 3000);
    assert.ok(written < 8 * 1024 * 1024, `${written} bytes read`);
    await c.up.close();
  });
});

describe('StreamableUpstream: an error answer whose body never ends (ADR 0168)', () => {
  // The GET stream's error answer was read for its excerpt with no deadline (a GET has no idle one): a target that
  // answered 500 and never ended its body held the GET stream's opening, never retried, until the session closed.
  let closed = 0;
  const fixture = rawServerWithTarget((req, res) => {
    req.resume();
    if (req.method === 'POST') return void res.writeHead(202).end();
    res.writeHead(500, { 'content-type': 'text/plain' });
    res.write('broken');
    res.on('close', () => closed++);
  });

  it('reports what came of the body within the excerpt deadline and lets the answer go', async () => {
    const c = client(fixture.target);
    await c.up.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    await waitFor(() => c.errors.some((e) => /Failed to open SSE stream \(HTTP 500 Internal Server Error\): broken/.test(e.message)), 'the GET stream\'s failure', 8000);
    await waitFor(() => closed >= 1, 'the answer to be let go');
    await c.up.close();
  });
});

describe('StreamableUpstream: broken and cancelled streams', () => {
  const open = new Set<ServerResponse>();
  let closedResponses = 0;
  const fixture = rawServerWithTarget((req, res) => {
    let body = '';
    req.setEncoding('utf8').on('data', (s: string) => (body += s));
    req.on('end', () => {
      const m = JSON.parse(body) as { id?: number; method: string };
      if (m.id === undefined) return void res.writeHead(202).end();
      if (m.method === 'drip') {
        // A JSON answer that starts and then comes a byte at a time, under any idle deadline: it never ends.
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('{"jsonrpc":"2.0",');
        open.add(res);
        return void res.on('close', () => closedResponses++);
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      if (m.method === 'break') {
        // Half an event, then the connection drops: no answer, no event id to resume from.
        res.write('event: message\ndata: {"jsonrpc":"2.0",');
        setTimeout(() => res.socket?.destroy(), 20);
      } else if (m.method === 'hang') {
        open.add(res);
        res.write(': working\n\n');
        res.on('close', () => closedResponses++);
      } else if (m.method === 'split') {
        // The answer's UTF-8 text cut inside a character, CRLF line endings, a comment first.
        const answer = Buffer.from(`: hi\r\nevent: message\r\ndata: {"jsonrpc":"2.0","id":${m.id},"result":{"text":"héllo ✓"}}\r\n\r\n`);
        const cut = answer.indexOf(Buffer.from('✓')) + 1;
        res.write(answer.subarray(0, cut));
        setTimeout(() => res.end(answer.subarray(cut)), 10);
      }
    });
  });

  it('answers a request whose stream broke before its answer with a JSON-RPC error, and reports it', async () => {
    const c = client(fixture.target);
    await c.up.send({ jsonrpc: '2.0', id: 7, method: 'break' } as JSONRPCMessage);
    const answer = await c.answer(7);
    assert.equal((answer.error as { code: number }).code, -32603);
    assert.match((answer.error as { message: string }).message, /stream ended before the answer/);
    assert.ok(c.errors.some((e) => /SSE stream disconnected/.test(e.message)));
    await c.up.close();
  });

  it('decodes UTF-8 cut between chunks and CRLF events', async () => {
    const c = client(fixture.target);
    await c.up.send({ jsonrpc: '2.0', id: 8, method: 'split' } as JSONRPCMessage);
    assert.deepEqual((await c.answer(8)).result, { text: 'héllo ✓' });
    await c.up.close();
  });

  it('ends the response stream of a request once its cancellation is sent, and every stream on close', async () => {
    const c = client(fixture.target);
    await c.up.send({ jsonrpc: '2.0', id: 9, method: 'hang' } as JSONRPCMessage);
    await c.up.send({ jsonrpc: '2.0', id: 10, method: 'hang' } as JSONRPCMessage);
    await waitFor(() => open.size === 2, 'both requests');
    await c.up.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 9, reason: 'test' } });
    await waitFor(() => closedResponses === 1, 'the cancelled request’s stream to end');
    await c.up.close();
    await waitFor(() => closedResponses === 2, 'the other stream to end with the connection');
    assert.equal(c.messages.length, 0, 'no error answers for cancelled or closed requests');
  });

  it('stops reading a JSON answer once its cancellation is sent (ADR 0168)', async () => {
    // The read went on until the session closed: a target dripping its answer held a connection per cancelled call.
    const c = client(fixture.target);
    open.clear();
    const closedBefore = closedResponses;
    const sent = c.up.send({ jsonrpc: '2.0', id: 11, method: 'drip' } as JSONRPCMessage).then(
      () => 'settled',
      (err: Error) => err.message,
    );
    await waitFor(() => open.size === 1, 'the answer to start');
    await c.up.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 11, reason: 'test' } });
    await waitFor(() => closedResponses === closedBefore + 1, 'the cancelled request’s answer to be let go');
    assert.match(await sent, /cancelled/);
    await c.up.close();
  });

  it('finds where complete UTF-8 sequences end', () => {
    const s = Buffer.from('a✓b€😀');
    for (let i = 0; i <= s.length; i++) {
      const part = s.subarray(0, i);
      const end = completeUtf8(part);
      assert.equal(part.subarray(0, end).toString('utf8').includes('\uFFFD'), false, `cut at ${i}`);
      assert.ok(i - end < 4);
    }
  });
});
