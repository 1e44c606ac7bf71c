import { definePolicy } from 'switchyard/sdk';
import type { McpAuthenticationConfig } from './mcp-authentication.ts';
import { mcpAuthenticationSchema } from './schema.ts';

/**
 * `mcpAuthentication` (SPEC 5.1, BEHAVIOUR.md §4.2): bearer JWTs of MCP clients, the RFC 9728 / RFC 8414 discovery
 * documents, and the 401 challenge that starts an MCP client's OAuth flow. Claims become the `jwt` attribute.
 */
export default definePolicy<McpAuthenticationConfig>({
  key: 'mcpAuthentication',
  description: 'Validate MCP clients\' bearer JWTs and serve OAuth protected-resource and authorization-server metadata.',
  schema: mcpAuthenticationSchema,
  attach: ['routePolicies'],
  phase: 'authn',
  // First in authn: the discovery documents it serves must answer before any other authentication policy runs.
  order: 5,
  celVariables: [{ name: 'jwt', description: 'Claims of the JWT a `jwtAuth` (or `mcpAuthentication`) policy accepted: `jwt.sub`, `jwt.iss`, any custom claim.' }],
  async compile(config, ctx) {
    // jose loads only when a config uses this policy.
    const { compileMcpAuthentication } = await import('./mcp-authentication.ts');
    return compileMcpAuthentication(config, ctx);
  },
});
