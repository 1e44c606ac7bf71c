// Backend modes: `prefixMode: always` with one target, and `statefulMode: stateless`.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { INIT, alive, connectClient, everythingStdio, messagesOf, rawPost, startMcpGateway, waitFor } from './harness.ts';

describe('mcp backend modes', () => {
  it('prefixMode always: one target, prefixed names, gateway-made initialize', async () => {
    const gw = await startMcpGateway({ targets: [everythingStdio()], prefixMode: 'always' });
    try {
      const { client, transport } = await connectClient(gw.mcpUrl);
      assert.equal(client.getServerVersion()?.name, 'switchyard');
      const tools = (await client.listTools()).tools.map((t) => t.name);
      assert.ok(tools.length > 0 && tools.every((t) => t.startsWith('everything_')));
      const r = await client.callTool({ name: 'everything_echo', arguments: { message: 'p' } });
      assert.deepEqual(r.content, [{ type: 'text', text: 'Echo: p' }]);
      await transport.terminateSession();
      await client.close();
    } finally {
      await gw.stop();
    }
  });

  it('statefulMode stateless: no session, fresh target connections per request, closed after the answer', async () => {
    const gw = await startMcpGateway({ targets: [everythingStdio()], statefulMode: 'stateless' });
    try {
      const init = await rawPost(gw.mcpUrl, INIT(1));
      assert.equal(init.status, 200);
      assert.equal(init.headers.get('mcp-session-id'), null);
      assert.equal((messagesOf(init.text)[0]!.result as { serverInfo: { name: string } }).serverInfo.name, 'mcp-servers/everything');

      const list = await rawPost(gw.mcpUrl, JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }), { 'mcp-protocol-version': '2025-06-18' });
      assert.equal(list.status, 200);
      const tools = (messagesOf(list.text)[0]!.result as { tools: { name: string }[] }).tools.map((t) => t.name);
      assert.ok(tools.includes('echo'));
      const call = await rawPost(gw.mcpUrl, JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'echo', arguments: { message: 's' } } }));
      assert.deepEqual((messagesOf(call.text)[0]!.result as { content: unknown }).content, [{ type: 'text', text: 'Echo: s' }]);

      const pids = gw.stdioPids();
      assert.equal(pids.length, 3, 'one process per request');
      await waitFor(() => pids.every((p) => !alive(p)), 'every per-request process to stop');

      assert.equal((await fetch(gw.mcpUrl, { headers: { accept: 'text/event-stream' } })).status, 405);
      assert.equal((await fetch(gw.mcpUrl, { method: 'DELETE' })).status, 405);
    } finally {
      await gw.stop();
    }
  });
});
