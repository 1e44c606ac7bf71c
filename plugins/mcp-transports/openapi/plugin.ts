import { defineMcpTransport } from 'switchyard/sdk';
import type { McpTransportInstance } from '../../lib/mcp/upstream-contract.ts';
import schema from './schema.json' with { type: 'json' };
import { compileOpenApiTarget } from './target.ts';
import type { OpenApiTargetConfig } from './target.ts';

/** `openapi`: an HTTP API described by an OpenAPI 3.x document, served to the `mcp` backend as MCP tools. */
export default defineMcpTransport<OpenApiTargetConfig, McpTransportInstance>({
  key: 'openapi',
  description: 'An HTTP API described by an OpenAPI 3.0/3.1 document, offered as MCP tools (one per operation).',
  schema,
  compile: (config, ctx) => compileOpenApiTarget(config, ctx),
});
