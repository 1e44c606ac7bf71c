import { defineBackend } from 'switchyard/sdk';
import { mcpTargetPoliciesSlot, mcpTransportSlot } from '../../lib/slots/mcp.ts';
import type { McpBackendConfig } from './mcp.ts';
import schema from './schema.json' with { type: 'json' };
import { sessionSection } from './session-key.ts';

/** `mcp`: one MCP server endpoint aggregating the targets behind it (SPEC §2.5.1, §4.3; docs/mcp.md). */
export default defineBackend<McpBackendConfig>({
  key: 'mcp',
  description: 'Serve MCP clients from one endpoint aggregating MCP servers (stdio, SSE, streamable HTTP, OpenAPI).',
  schema,
  slots: [mcpTransportSlot, mcpTargetPoliciesSlot],
  configSections: [sessionSection],
  // The implementation (and the MCP SDK it uses) loads only when a config has an `mcp` backend.
  async compile(config, ctx) {
    const { compileMcpBackend } = await import('./mcp.ts');
    return compileMcpBackend(config, ctx);
  },
});
