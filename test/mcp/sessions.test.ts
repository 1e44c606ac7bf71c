// Sessions (DECIDED 15): sealed self-describing ids, resumed by a second gateway holding the same key, refused with
// another key; DELETE; unknown and missing ids; idle expiry stops the session's processes; a reload keeps sessions.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { stringify } from 'yaml';
import { INIT, alive, connectClient, everythingStdio, messagesOf, rawPost, startEverything, startMcpGateway, waitFor } from './harness.ts';
import type { McpGateway, UpstreamServer } from './harness.ts';

const KEY = randomBytes(32).toString('hex');

describe('mcp sessions: resume by another gateway process', () => {
  let http: UpstreamServer;
  let a: McpGateway;
  let b: McpGateway;
  let other: McpGateway;
  before(async () => {
    http = await startEverything('streamableHttp');
    const mcp = { targets: [everythingStdio('local'), { name: 'remote', mcp: { host: '127.0.0.1', port: http.port } }] };
    a = await startMcpGateway(mcp, { staticConfig: { session: { key: KEY } } });
    // The second gateway gets the key from the environment (SESSION_KEY overrides the file).
    b = await startMcpGateway(mcp, { env: { ...process.env, SESSION_KEY: KEY } });
    other = await startMcpGateway(mcp, { staticConfig: { session: { key: randomBytes(32).toString('hex') } } });
  });
  after(async () => {
    await Promise.all([a?.stop(), b?.stop(), other?.stop()]);
    await http?.stop();
  });

  it('continues a session on a gateway that never saw it: same upstream session, fresh stdio child re-initialized', async () => {
    const first = await connectClient(a.mcpUrl, { name: 'resumer', capabilities: { sampling: {} } });
    const sessionId = first.transport.sessionId!;
    await first.client.callTool({ name: 'remote_echo', arguments: { message: 'on a' } });
    const upstreamSessions = (): number => http.output.join('').match(/Session initialized with ID/g)?.length ?? 0;
    const sessionsBefore = upstreamSessions();
    await first.client.close(); // no DELETE: the session stays alive

    const second = await connectClient(b.mcpUrl, { sessionId });
    try {
      const r1 = await second.client.callTool({ name: 'remote_echo', arguments: { message: 'on b' } });
      assert.deepEqual(r1.content, [{ type: 'text', text: 'Echo: on b' }]);
      const r2 = await second.client.callTool({ name: 'local_echo', arguments: { message: 'stdio on b' } });
      assert.deepEqual(r2.content, [{ type: 'text', text: 'Echo: stdio on b' }]);
      assert.equal(upstreamSessions(), sessionsBefore, 'the streamable-HTTP upstream session was resumed, not recreated');
      assert.equal(b.stdioPids().length, 1, 'gateway b started its own stdio child');
      assert.ok(b.logs.some((l) => l.includes('resumed MCP session from its sealed id')));
      // The new stdio child was initialized with the client's own initialize params, kept in the sealed id: it
      // knows the client can sample, so it offers its sampling tool.
      const tools = (await second.client.listTools()).tools.map((t) => t.name);
      assert.ok(tools.includes('local_trigger-sampling-request'), tools.join(','));
    } finally {
      await second.transport.terminateSession();
      await second.client.close();
    }
  });

  it('refuses a session id sealed with another key (404), and a forged or truncated one', async () => {
    const first = await connectClient(a.mcpUrl);
    const sessionId = first.transport.sessionId!;
    try {
      const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
      const elsewhere = await rawPost(other.mcpUrl, body, { 'mcp-session-id': sessionId });
      assert.equal(elsewhere.status, 404);
      assert.deepEqual(JSON.parse(elsewhere.text), { jsonrpc: '2.0', id: null, error: { code: -32001, message: 'Session not found' } });
      const forged = sessionId.slice(0, -4) + (sessionId.endsWith('AAAA') ? 'BBBB' : 'AAAA');
      assert.equal((await rawPost(b.mcpUrl, body, { 'mcp-session-id': forged })).status, 404);
      assert.equal((await rawPost(b.mcpUrl, body, { 'mcp-session-id': sessionId.slice(0, 30) })).status, 404);
    } finally {
      await first.transport.terminateSession();
      await first.client.close();
    }
  });
});

describe('mcp sessions: lifecycle on one gateway', () => {
  let gw: McpGateway;
  before(async () => {
    // The default idle timeout: these tests must not race a 1 s expiry on a loaded machine (idle tests below).
    gw = await startMcpGateway({ targets: [everythingStdio()] });
  });
  after(() => gw.stop());

  it('DELETE ends the session: its process stops and the id is refused afterwards', async () => {
    const { client, transport } = await connectClient(gw.mcpUrl);
    const sessionId = transport.sessionId!;
    await client.listTools();
    const pid = gw.stdioPids().at(-1)!;
    assert.ok(alive(pid));
    const del = await fetch(gw.mcpUrl, { method: 'DELETE', headers: { 'mcp-session-id': sessionId } });
    assert.equal(del.status, 200);
    await waitFor(() => !alive(pid), `stdio child ${pid} to exit`);
    const again = await rawPost(gw.mcpUrl, JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }), { 'mcp-session-id': sessionId });
    assert.equal(again.status, 404, 'a deleted session is not resumed from its sealed id');
    await client.close();
  });

  it('answers unknown ids with 404 and requests without an id with 400', async () => {
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
    const unknown = await rawPost(gw.mcpUrl, body, { 'mcp-session-id': 'no-such-session' });
    assert.equal(unknown.status, 404);
    const missing = await rawPost(gw.mcpUrl, body);
    assert.equal(missing.status, 400);
    assert.match(JSON.parse(missing.text).error.message, /Mcp-Session-Id header is required/);
    const get = await fetch(gw.mcpUrl, { headers: { accept: 'text/event-stream', 'mcp-session-id': 'nope' } });
    assert.equal(get.status, 404);
    const del = await fetch(gw.mcpUrl, { method: 'DELETE' });
    assert.equal(del.status, 400);
  });
});

describe('mcp sessions: idle expiry', () => {
  let gw: McpGateway;
  before(async () => {
    gw = await startMcpGateway({ targets: [everythingStdio()], sessionIdleTimeout: '1s' });
  });
  after(() => gw.stop());

  it('expires an idle session: its process stops and the id is refused', async () => {
    const init = await rawPost(gw.mcpUrl, INIT(7));
    assert.equal(init.status, 200);
    const sessionId = init.headers.get('mcp-session-id')!;
    assert.equal(messagesOf(init.text)[0]!.id, 7);
    const pid = gw.stdioPids().at(-1)!;
    assert.ok(pid, 'the session started its child'); // it may already be stopping: the timeout is 1 s
    await waitFor(() => !alive(pid), 'the idle session to expire', 8000);
    assert.ok(gw.logs.some((l) => l.includes('MCP session expired after being idle')));
    const late = await rawPost(gw.mcpUrl, JSON.stringify({ jsonrpc: '2.0', id: 8, method: 'ping' }), { 'mcp-session-id': sessionId });
    assert.equal(late.status, 404);
  });

  it('keeps an open GET stream from expiring', async () => {
    // Our own GET stream, open once its headers arrived (the SDK client opens its GET in the background, and on a
    // loaded machine not always within the 1 s timeout: that made this test flaky). If the session expires before
    // the stream is open (a stall of more than 1 s between our requests), that is not what is tested: start over.
    let open: { headers: Record<string, string>; pid: number; aborter: AbortController } | undefined;
    for (let attempt = 0; attempt < 5 && !open; attempt++) {
      const init = await rawPost(gw.mcpUrl, INIT(1));
      assert.equal(init.status, 200);
      const headers = { 'mcp-session-id': init.headers.get('mcp-session-id')!, 'mcp-protocol-version': '2025-11-25' };
      const pid = gw.stdioPids().at(-1)!;
      const aborter = new AbortController();
      const get = await fetch(gw.mcpUrl, { headers: { ...headers, accept: 'text/event-stream' }, signal: aborter.signal });
      if (get.status === 200) open = { headers, pid, aborter };
      else {
        assert.equal(get.status, 404, 'only an expired session refuses the stream');
        aborter.abort();
      }
    }
    assert.ok(open, 'a GET stream opened');
    try {
      assert.equal((await rawPost(gw.mcpUrl, JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }), open.headers)).status, 202);
      await new Promise((r) => setTimeout(r, 2500));
      assert.ok(alive(open.pid), 'a session with an open stream is not idle');
      const list = await rawPost(gw.mcpUrl, JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }), open.headers);
      assert.equal(list.status, 200, list.text);
      assert.ok((messagesOf(list.text)[0]!.result as { tools: unknown[] }).tools.length > 0);
    } finally {
      open.aborter.abort();
      await fetch(gw.mcpUrl, { method: 'DELETE', headers: open.headers });
    }
  });
});

describe('mcp sessions: config reload', () => {
  it('keeps sessions when the backend is unchanged', async () => {
    const gw = await startMcpGateway({ targets: [everythingStdio()] }, { staticConfig: {} });
    try {
      const { client, transport } = await connectClient(gw.mcpUrl);
      await client.listTools();
      const pid = gw.stdioPids().at(-1)!;
      // Same backend, one more route in front of it: a new snapshot.
      const text = stringify({
        config: { adminAddr: 'off', statsAddr: 'off', readinessAddr: 'off', logging: { format: 'json', level: 'debug' }, drainTimeout: '500ms' },
        binds: [
          {
            port: gw.port,
            listeners: [{ routes: [{ name: 'extra', matches: [{ path: { exact: '/other' } }], policies: { directResponse: { body: 'x', status: 200 } } }, { backends: [{ mcp: { targets: [everythingStdio()] } }] }] }],
          },
        ],
      });
      writeFileSync(gw.file, text);
      assert.equal(await gw.gateway.reload(), true);
      const r = await client.callTool({ name: 'echo', arguments: { message: 'after reload' } });
      assert.deepEqual(r.content, [{ type: 'text', text: 'Echo: after reload' }]);
      assert.ok(alive(pid));
      assert.equal(gw.stdioPids().length, 1, 'no new process: the same session went on');
      await transport.terminateSession();
      await client.close();
    } finally {
      await gw.stop();
    }
  });

  it('a session ended before a reload that changed the backend and one that changed it back stays ended (404)', async () => {
    const gw = await startMcpGateway({ targets: [everythingStdio()] }, { staticConfig: {} });
    const configWith = (mcp: Record<string, unknown>): string =>
      stringify({
        config: { logging: { format: 'json', level: 'debug' }, drainTimeout: '500ms' },
        binds: [{ port: gw.port, listeners: [{ routes: [{ backends: [{ mcp }] }] }] }],
      });
    try {
      const { client, transport } = await connectClient(gw.mcpUrl);
      const sessionId = transport.sessionId!;
      await client.listTools();
      const del = await fetch(gw.mcpUrl, { method: 'DELETE', headers: { 'mcp-session-id': sessionId } });
      assert.equal(del.status, 200);
      await client.close();
      // Another backend config (its store and sealing AAD change), then the first one again: its store is new.
      writeFileSync(gw.file, configWith({ targets: [everythingStdio()], sessionIdleTimeout: '10m' }));
      assert.equal(await gw.gateway.reload(), true);
      await new Promise((r) => setTimeout(r, 200)); // the first config retires, its store with it
      writeFileSync(gw.file, configWith({ targets: [everythingStdio()] }));
      assert.equal(await gw.gateway.reload(), true);
      const again = await rawPost(gw.mcpUrl, JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }), { 'mcp-session-id': sessionId });
      assert.equal(again.status, 404, 'a deleted session is not resumed after the reloads');
    } finally {
      await gw.stop();
    }
  });
});
