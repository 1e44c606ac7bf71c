import { defineAttribute } from 'switchyard/sdk';

/** One MCP item as the authorizer sees it: the target that serves it and its upstream (unprefixed) name. */
export interface McpItem {
  readonly kind: 'tool' | 'prompt' | 'resource';
  /** The target's `name` from the config. */
  readonly target: string;
  /** The tool or prompt name, or the resource URI, as the target knows it (without the gateway's prefix). */
  readonly name: string;
  /** The client's JSON-RPC method (`tools/list`, `tools/call`, ...), for CEL `mcp.method`. */
  readonly method?: string;
}

/** Decides per request whether the caller may see and use an item. */
export type McpAuthorizer = (item: McpItem) => boolean;

/**
 * Set per request by an authorization policy (`mcpAuthorization`) before the `mcp` backend runs. The backend hides
 * items the authorizer refuses from every list and answers calls to them with JSON-RPC `-32602 Unknown tool: <name>`
 * (BEHAVIOUR.md DECIDED 3). Unset means everything is allowed.
 */
export const MCP_AUTHORIZER = defineAttribute<McpAuthorizer>('mcpAuthorizer');
