// The SDK v2 client (@modelcontextprotocol/client, 2026-07-28 capable) against the gateway. The gateway speaks the
// 2024-11-05 … 2025-11-25 revisions; a v2 client in `auto` mode probes `server/discover`, gets a JSON-RPC error
// and falls back cleanly to the legacy era (docs/mcp.md, "Not done yet").
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { everythingStdio, memoryStdio, startMcpGateway } from './harness.ts';
import type { McpGateway } from './harness.ts';

describe('mcp backend with the SDK v2 client', () => {
  let gw: McpGateway;
  before(async () => {
    gw = await startMcpGateway({ targets: [everythingStdio(), memoryStdio()] });
  });
  after(() => gw.stop());

  for (const mode of ['legacy', 'auto'] as const) {
    it(`versionNegotiation ${mode}: legacy era, 2025-11-25, calls routed`, async () => {
      const client = new Client({ name: 'v2-test', version: '1.0.0' }, { versionNegotiation: { mode } });
      await client.connect(new StreamableHTTPClientTransport(gw.mcpUrl));
      try {
        assert.equal(client.getProtocolEra(), 'legacy');
        assert.equal(client.getNegotiatedProtocolVersion(), '2025-11-25');
        const tools = (await client.listTools()).tools.map((t) => t.name);
        assert.ok(tools.includes('everything_echo') && tools.includes('memory_read_graph'));
        const r = await client.callTool({ name: 'everything_echo', arguments: { message: mode } });
        assert.deepEqual(r.content, [{ type: 'text', text: `Echo: ${mode}` }]);
      } finally {
        await client.close();
      }
    });
  }

  it('a client pinned to 2026-07-28 gets a clear negotiation error (the modern era is not served yet)', async () => {
    const client = new Client({ name: 'v2-test', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    await assert.rejects(client.connect(new StreamableHTTPClientTransport(gw.mcpUrl)), /did not offer pinned protocol version 2026-07-28/);
    await client.close().catch(() => undefined);
  });
});
