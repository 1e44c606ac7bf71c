// The SDK v2 client (@modelcontextprotocol/client, 2026-07-28 capable) against the gateway with two legacy stdio
// targets. `legacy` mode negotiates 2025-11-25 with `initialize`; `auto` probes `server/discover`, which the gateway
// answers, so it settles on 2026-07-28, as does a client pinned to it (docs/mcp.md, "Protocol revisions").
// test/mcp/revision-2026-07-28.test.ts covers the 2026-07-28 revision in depth.
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

  const modes = [
    { mode: 'legacy', era: 'legacy', version: '2025-11-25' },
    { mode: 'auto', era: 'modern', version: '2026-07-28' },
    { mode: { pin: '2026-07-28' }, era: 'modern', version: '2026-07-28' },
  ] as const;
  for (const { mode, era, version } of modes) {
    const label = typeof mode === 'string' ? mode : `pin ${mode.pin}`;
    it(`versionNegotiation ${label}: ${era} era, ${version}, calls routed`, async () => {
      const client = new Client({ name: 'v2-test', version: '1.0.0' }, { versionNegotiation: { mode } });
      await client.connect(new StreamableHTTPClientTransport(gw.mcpUrl));
      try {
        assert.equal(client.getProtocolEra(), era);
        assert.equal(client.getNegotiatedProtocolVersion(), version);
        const tools = (await client.listTools()).tools.map((t) => t.name);
        assert.ok(tools.includes('everything_echo') && tools.includes('memory_read_graph'));
        const r = await client.callTool({ name: 'everything_echo', arguments: { message: label } });
        assert.deepEqual(r.content, [{ type: 'text', text: `Echo: ${label}` }]);
        assert.match(JSON.stringify((await client.callTool({ name: 'memory_read_graph', arguments: {} })).content), /entities/);
      } finally {
        await client.close();
      }
    });
  }
});
