import { definePolicy } from 'switchyard/sdk';
import type { McpAuthorizationConfig } from './mcp-authorization.ts';
import schema from './schema.json' with { type: 'json' };

/**
 * `mcpAuthorization` (SPEC 5.5, BEHAVIOUR.md §5.5, DECIDED 3): CEL rules per MCP item. It only publishes an authorizer
 * for the request; the `mcp` backend applies it to every list and call.
 */
export default definePolicy<McpAuthorizationConfig>({
  key: 'mcpAuthorization',
  description: 'Allow or hide MCP tools, prompts and resources per caller with CEL rules (`mcp.tool.name`, `jwt.*`, \u2026).',
  schema,
  // Under `mcpTargetPolicies` it decides for that target's items only (plugins/backends/mcp/target-authorizer.ts).
  attach: ['routePolicies', 'backendPolicies', 'mcpTargetPolicies'],
  phase: 'authz',
  // After extAuthz (10) and authorization (20): a request denied outright never gets this far.
  order: 30,
  celVariables: [{ name: 'mcp', description: 'The MCP object being authorized (`mcp.tool.name`, `mcp.tool.target`, `mcp.prompt.name`, `mcp.resource.name`).' }],
  async compile(config, ctx) {
    // The implementation loads only when a config uses this policy.
    const { compileMcpAuthorization } = await import('./mcp-authorization.ts');
    return compileMcpAuthorization(config, ctx);
  },
});
