import { defineBackend } from 'switchyard/sdk';
import { compileMcpBackend } from './backend.ts';
import type { McpBackendConfig } from './backend.ts';
import schema from './schema.json' with { type: 'json' };

/** `mcp`: one MCP server endpoint aggregating the targets behind it (SPEC §2.5.1, §4.3; docs/mcp.md). */
export default defineBackend<McpBackendConfig>({
  key: 'mcp',
  description: 'Serve MCP clients from one endpoint aggregating MCP servers (stdio, SSE, streamable HTTP, OpenAPI).',
  schema,
  compile: compileMcpBackend,
});
