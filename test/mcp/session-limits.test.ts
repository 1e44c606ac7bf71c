// Bounded MCP sessions (issue 14 items 4 and 5): what a client can make the gateway hold for it is capped, with
// documented defaults: live sessions per endpoint (`maxSessions`, 1024) and requests in progress per session
// (`maxPendingRequests`, 128). Past a limit the client gets a JSON-RPC error (-32000) and an HTTP status that says
// to come back later; ending what it holds frees the place.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { request } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { INIT, connectClient, fixtureStdio, messagesOf, rawPost, startMcpGateway, waitFor } from './harness.ts';
import type { McpGateway } from './harness.ts';

/** Open a legacy `GET /sse` stream; resolves with its status once the headers are in, and a way to close it. */
function openLegacy(gw: McpGateway): Promise<{ status: number; text: () => string; close: () => void }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port: gw.port, path: '/sse', headers: { accept: 'text/event-stream' } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('error', () => undefined);
      resolve({ status: res.statusCode!, text: () => text, close: () => req.destroy() });
    });
    req.on('error', reject);
    req.end();
  });
}

describe('mcp session limits: maxSessions', () => {
  let gw: McpGateway;
  before(async () => {
    gw = await startMcpGateway({ targets: [fixtureStdio()], maxSessions: 2 });
  });
  after(() => gw?.stop());

  it('refuses a session past the limit (streamable HTTP and legacy SSE alike) until one ends', async () => {
    const a = await rawPost(gw.mcpUrl, INIT(1), { accept: 'application/json' });
    assert.equal(a.status, 200, a.text);
    const legacy = await openLegacy(gw);
    assert.equal(legacy.status, 200);

    const refused = await rawPost(gw.mcpUrl, INIT(2), { accept: 'application/json' });
    assert.equal(refused.status, 503);
    assert.equal(refused.headers.get('mcp-session-id'), null);
    const body = JSON.parse(refused.text) as { id: unknown; error: { code: number; message: string } };
    assert.equal(body.id, 2);
    assert.equal(body.error.code, -32000);
    assert.match(body.error.message, /too many MCP sessions: this endpoint holds its limit of 2 \(maxSessions\)/);
    const legacyRefused = await openLegacy(gw);
    assert.equal(legacyRefused.status, 503);
    legacyRefused.close();
    await assert.rejects(connectClient(gw.mcpUrl), /maxSessions/);

    // The legacy stream closing ends its session: a place is free again.
    legacy.close();
    await waitFor(async () => (await rawPost(gw.mcpUrl, INIT(3), { accept: 'application/json' })).status === 200, 'a place to free up');
    // And DELETE frees one too.
    assert.equal((await rawPost(gw.mcpUrl, INIT(4), { accept: 'application/json' })).status, 503);
    const del = await fetch(gw.mcpUrl, { method: 'DELETE', headers: { 'mcp-session-id': a.headers.get('mcp-session-id')! } });
    assert.equal(del.status, 200);
    assert.equal((await rawPost(gw.mcpUrl, INIT(5), { accept: 'application/json' })).status, 200);
  });
});

describe('mcp session limits: maxSessions counts sessions resumed from sealed ids', () => {
  const key = randomBytes(32).toString('hex');
  let a: McpGateway;
  let b: McpGateway;
  before(async () => {
    // The same backend config on both: a sealed id names the config it was made under.
    a = await startMcpGateway({ targets: [fixtureStdio()], maxSessions: 1 }, { staticConfig: { session: { key } } });
    b = await startMcpGateway({ targets: [fixtureStdio()], maxSessions: 1 }, { staticConfig: { session: { key } } });
  });
  after(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
  });

  it('another gateway resumes sealed ids only while it is under its maxSessions (503 past it, as for initialize)', async () => {
    // Two sealed ids from a, one session at a time there (the first ended by DELETE, which b never hears of).
    const ids: string[] = [];
    for (const n of [1, 2]) {
      const init = await rawPost(a.mcpUrl, INIT(n), { accept: 'application/json' });
      assert.equal(init.status, 200, init.text);
      ids.push(init.headers.get('mcp-session-id')!);
      if (n === 1) assert.equal((await fetch(a.mcpUrl, { method: 'DELETE', headers: { 'mcp-session-id': ids[0]! } })).status, 200);
    }
    const ping = (id: string, n: number) => rawPost(b.mcpUrl, JSON.stringify({ jsonrpc: '2.0', id: n, method: 'ping' }), { accept: 'application/json', 'mcp-session-id': id });
    assert.equal((await ping(ids[0]!, 10)).status, 200, 'the first id resumed on b');
    const refused = await ping(ids[1]!, 11);
    assert.equal(refused.status, 503, refused.text);
    assert.match((JSON.parse(refused.text) as { error: { message: string } }).error.message, /too many MCP sessions: this endpoint holds its limit of 1 \(maxSessions\)/);
    assert.equal((await ping(ids[0]!, 12)).status, 200, 'the resumed session goes on');
  });
});

describe('mcp session limits: maxSessions counts 2026-07-28 client identities too', () => {
  let gw: McpGateway;
  before(async () => {
    gw = await startMcpGateway({ targets: [fixtureStdio()], maxSessions: 1 });
  });
  after(() => gw?.stop());

  const post20260728 = (id: number, client: string): Promise<{ status: number; text: string }> =>
    rawPost(
      gw.mcpUrl,
      JSON.stringify({
        jsonrpc: '2.0',
        id,
        method: 'tools/call',
        params: {
          name: 'pid',
          arguments: {},
          _meta: {
            'io.modelcontextprotocol/protocolVersion': '2026-07-28',
            'io.modelcontextprotocol/clientInfo': { name: client, version: '1' },
            'io.modelcontextprotocol/clientCapabilities': {},
          },
        },
      }),
      { accept: 'application/json', 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'pid' },
    );

  it('a new identity is refused while a session holds the only place; an idle identity makes room for another', async () => {
    const legacy = await rawPost(gw.mcpUrl, INIT(1), { accept: 'application/json' });
    assert.equal(legacy.status, 200);
    const refused = await post20260728(2, 'a');
    assert.equal(refused.status, 503, refused.text);
    assert.match((JSON.parse(refused.text) as { error: { message: string } }).error.message, /maxSessions/);
    await fetch(gw.mcpUrl, { method: 'DELETE', headers: { 'mcp-session-id': legacy.headers.get('mcp-session-id')! } });
    const a = await post20260728(3, 'a');
    assert.equal(a.status, 200, a.text);
    // Client `a` is idle now: a new identity takes its place rather than being refused.
    const b = await post20260728(4, 'b');
    assert.equal(b.status, 200, b.text);
    assert.equal((await rawPost(gw.mcpUrl, INIT(5), { accept: 'application/json' })).status, 503);
  });
});

describe('mcp session limits: maxPendingRequests', () => {
  let gw: McpGateway;
  before(async () => {
    gw = await startMcpGateway({ targets: [fixtureStdio()], maxPendingRequests: 2 });
  });
  after(() => gw?.stop());

  it('answers a request past the limit with a JSON-RPC error; answered requests free their places', async () => {
    const session = (await rawPost(gw.mcpUrl, INIT(1), { accept: 'application/json' })).headers.get('mcp-session-id')!;
    const headers = { 'mcp-session-id': session, accept: 'application/json' };
    const wait = (id: number): string => JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'wait', arguments: {} } });
    const controller = new AbortController();
    const slow = [10, 11].map((id) =>
      fetch(gw.mcpUrl, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: wait(id), signal: controller.signal }).catch(() => undefined),
    );
    await waitFor(() => gw.logs.filter((l) => l.includes('fixture: waiting')).length >= 2, 'both waits to reach the target');
    const third = await rawPost(gw.mcpUrl, wait(12), headers);
    assert.equal(third.status, 429);
    const body = JSON.parse(third.text) as { id: unknown; error: { code: number; message: string } };
    assert.equal(body.id, 12);
    assert.equal(body.error.code, -32000);
    assert.match(body.error.message, /too many requests in progress on this session \(the limit is 2, maxPendingRequests\)/);
    // Every request counts, a ping in a batch too.
    const batch = await rawPost(gw.mcpUrl, JSON.stringify([{ jsonrpc: '2.0', id: 20, method: 'ping' }]), headers);
    assert.equal(messagesOf(batch.text)[0]!.error !== undefined, true, 'still full: the ping is refused too');
    // The client goes away: its calls are cancelled and their places come back.
    controller.abort();
    await Promise.all(slow);
    await waitFor(async () => {
      const ping = await rawPost(gw.mcpUrl, JSON.stringify({ jsonrpc: '2.0', id: 30, method: 'ping' }), headers);
      return ping.status === 200;
    }, 'the cancelled calls to free their places');
  });
});

describe('mcp session limits: config', () => {
  it('refuses limits below 1 at load', async () => {
    await assert.rejects(startMcpGateway({ targets: [fixtureStdio()], maxSessions: 0 }), /maxSessions/);
    await assert.rejects(startMcpGateway({ targets: [fixtureStdio()], maxPendingRequests: 0 }), /maxPendingRequests/);
  });
});
