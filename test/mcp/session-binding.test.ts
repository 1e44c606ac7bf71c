// An MCP session belongs to the caller that opened it (ADR 0120; the MCP spec's security practice: a session id is
// not a credential, bind it to the user). With an authentication policy on the route, another caller presenting the
// session id (on this gateway, or on another that holds the session key) gets 404 Session not found, as for an
// unknown id, and holds nothing there; the owner keeps using it.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { INIT, fixtureStdio, messagesOf, rawPost, startMcpGateway } from './harness.ts';
import type { McpGateway } from './harness.ts';

const KEY = randomBytes(32).toString('hex');
const ANA = 'sk-ana-0123456789abcdef';
const BOB = 'sk-bob-0123456789abcdef';

describe('mcp sessions are bound to the caller that opened them', () => {
  let a: McpGateway;
  let b: McpGateway;
  before(async () => {
    const policies = { apiKey: { keys: [{ key: ANA, metadata: { user: 'ana' } }, { key: BOB, metadata: { user: 'bob' } }], mode: 'strict' } };
    a = await startMcpGateway({ targets: [fixtureStdio()] }, { policies, staticConfig: { session: { key: KEY } } });
    b = await startMcpGateway({ targets: [fixtureStdio()] }, { policies, staticConfig: { session: { key: KEY } } });
  });
  after(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
  });

  const list = (gw: McpGateway, key: string, session: string) =>
    rawPost(gw.mcpUrl, JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/list' }), { 'x-api-key': key, 'mcp-session-id': session });

  it("another caller's requests with the session id get 404, here and on another gateway; the owner's are served", async () => {
    const init = await rawPost(a.mcpUrl, INIT(), { 'x-api-key': ANA });
    assert.equal(init.status, 200);
    const session = init.headers.get('mcp-session-id')!;
    await rawPost(a.mcpUrl, JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }), { 'x-api-key': ANA, 'mcp-session-id': session });

    for (const gw of [a, b]) {
      const stolen = await list(gw, BOB, session);
      assert.equal(stolen.status, 404, 'another caller');
      assert.deepEqual(JSON.parse(stolen.text).error, { code: -32001, message: 'Session not found' });
    }
    const del = await fetch(a.mcpUrl, { method: 'DELETE', headers: { 'x-api-key': BOB, 'mcp-session-id': session } });
    assert.equal(del.status, 404, 'nor can another caller end it');

    for (const gw of [a, b]) {
      const own = await list(gw, ANA, session);
      assert.equal(own.status, 200, 'the owner, here and resumed elsewhere');
      const tools = (messagesOf(own.text)[0]!.result as { tools: { name: string }[] }).tools.map((t) => t.name);
      assert.ok(tools.includes('wait'), tools.join(','));
    }
  });
});
