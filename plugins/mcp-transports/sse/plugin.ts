import { defineMcpTransport } from '../../lib/slots/mcp.ts';
import type { TargetAddressConfig } from '../../lib/mcp/target-address.ts';
import schema from './schema.json' with { type: 'json' };

/** `sse`: a legacy (2024-11-05 HTTP+SSE) MCP server. */
export default defineMcpTransport<TargetAddressConfig>({
  key: 'sse',
  description: 'Connect to a legacy MCP server over server-sent events (GET stream + POST endpoint).',
  schema,
  async compile(config, ctx) {
    // The MCP SDK's SSE client loads only when a config uses this transport.
    const { compileSseTransport } = await import('./sse.ts');
    return compileSseTransport(config, ctx);
  },
});
