import { defineMcpTransport } from '../../lib/slots/mcp.ts';
import schema from './schema.json' with { type: 'json' };
import type { OpenApiTargetConfig } from './openapi.ts';

/** `openapi`: an HTTP API described by an OpenAPI 3.x document, served to the `mcp` backend as MCP tools. */
export default defineMcpTransport<OpenApiTargetConfig>({
  key: 'openapi',
  description: 'An HTTP API described by an OpenAPI 3.0/3.1 document, offered as MCP tools (one per operation).',
  schema,
  async compile(config, ctx) {
    // The converter and the MCP SDK types it validates against load only when a config uses this transport.
    const { compileOpenApiTarget } = await import('./openapi.ts');
    return compileOpenApiTarget(config, ctx);
  },
});
