/**
 * `switchyard/slots/mcp`: the extension points of the `mcp` backend, which declares them: the transport of an MCP
 * target (`stdio`, `sse`, `mcp`, `openapi`, or a third party's) and the per-target policies object.
 */
import { defineSlot, defineVariant } from 'switchyard/sdk';
import type { SlotPlugin, VariantManifest, VariantPlugin } from 'switchyard/sdk';
import type { McpTransportInstance } from '../mcp/upstream-contract.ts';

export type { McpConnectOptions, McpDiscoverOptions, McpDiscovery, McpTransportInstance, McpUpstream } from '../mcp/upstream-contract.ts';
export { McpTargetBusy } from '../mcp/upstream-contract.ts';

/** The transport of an MCP target (a `mcp.targets[]` item: exactly one transport key). Variants compile to `McpTransportInstance`. */
export const mcpTransportSlot: SlotPlugin<McpTransportInstance> = defineSlot<McpTransportInstance>({
  name: 'mcpTransport',
  type: 'oneOf',
  accepts: 'variant',
  noun: 'MCP transport',
  description: 'The transport of an MCP target.',
});

/** Policies of one MCP target (`mcp.targets[].policies`): a policy lists `mcpTargetPolicies` in `attach` to appear there. */
export const mcpTargetPoliciesSlot: SlotPlugin = defineSlot({
  name: 'mcpTargetPolicies',
  type: 'map',
  accepts: 'policy',
  noun: 'MCP target policy',
  description: 'Policies of one MCP target (`mcp.targets[].policies`), merged over the route and backend ones.',
});

/** Define an MCP transport (a key of an `mcp.targets[]` item); `compile` must return an `McpTransportInstance`. */
export function defineMcpTransport<C>(manifest: VariantManifest<C, McpTransportInstance>): VariantPlugin<C, McpTransportInstance> {
  return defineVariant(mcpTransportSlot, manifest);
}
