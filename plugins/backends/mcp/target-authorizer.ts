import type { Exchange } from 'switchyard/sdk';
import { MCP_AUTHORIZER } from '../../lib/mcp/authorizer.ts';
import type { McpAuthorizer } from '../../lib/mcp/authorizer.ts';
import type { CompiledTarget } from './target.ts';

const DENY_ALL: McpAuthorizer = () => false;

/**
 * Per-target authorization for one client request. Targets with request policies of their own (`mcpAuthorization`
 * under `targets[].policies`) run them on a copy of the request; what they leave as the authorizer decides for
 * that target's items, the route's authorizer for every other target's. A target whose policy answers instead
 * (refuses the client) shows this client nothing. The combined authorizer replaces the request's, so the session
 * code sees one authorizer as before. `own`: the targets with request policies, picked at config load.
 */
export function authorizeTargets(own: readonly CompiledTarget[], ex: Exchange): Promise<void> {
  return Promise.all(
    own.map(async (t): Promise<[string, McpAuthorizer | undefined]> => {
      const derived = await t.requestPolicies!.runRequestHooks(ex);
      return [t.name, derived.reply ? DENY_ALL : derived.exchange.get(MCP_AUTHORIZER)];
    }),
  ).then((entries) => {
    const byTarget = new Map(entries);
    const routeAuthorizer = ex.get(MCP_AUTHORIZER);
    ex.set<McpAuthorizer>(MCP_AUTHORIZER, (item) => {
      const decide = byTarget.has(item.target) ? byTarget.get(item.target) : routeAuthorizer;
      return decide ? decide(item) : true;
    });
  });
}
