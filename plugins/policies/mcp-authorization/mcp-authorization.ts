import { CEL_NOT_SET_HERE, defineAttribute } from 'switchyard/sdk';
import type { CompileContext, Exchange, PolicyInstance } from 'switchyard/sdk';
import { MCP_AUTHORIZER } from '../../lib/mcp/authorizer.ts';
import type { McpAuthorizer, McpItem } from '../../lib/mcp/authorizer.ts';
import { compileRules, concatRuleSets, decide, isEmptyRuleSet } from '../../lib/rule-set/rule-set.ts';
import type { RuleConfig, RuleSet } from '../../lib/rule-set/rule-set.ts';

export interface McpAuthorizationConfig {
  rules: RuleConfig[];
}

/** The rules already in force for this request (a route and a backend level both set): later levels add to them. */
const ACTIVE_RULES = defineAttribute<RuleSet>('mcpAuthorization.rules');

/** An item as the backend may describe it: `method` (the JSON-RPC method asking) when the backend passes it. */
type DescribedItem = McpItem & { readonly method?: string };

/** The CEL `mcp` variable for one item: `mcp.tool{name,target}`, `mcp.prompt{...}`, `mcp.resource{uri,name,target}`. */
export function mcpVariable(item: DescribedItem): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (item.kind === 'resource') out.resource = { uri: item.name, name: item.name, target: item.target };
  else out[item.kind] = { name: item.name, target: item.target };
  if (item.method !== undefined) {
    out.method = item.method;
    // The reference gateway's spelling, so rules copied from it keep working.
    out.methodName = item.method;
  }
  return out;
}

/** A per-request authorizer over `rules`, evaluated with the request's variables plus `mcp`. */
export function authorizerFor(rules: RuleSet, ex: Exchange): McpAuthorizer {
  return (item) => decide(rules, ex, { mcp: mcpVariable(item) });
}

// The rules see `mcp`; no rule is handed an LLM body, and no `ai` backend serves an MCP item (ADR 0176).
const NOT_SET = { llmRequest: CEL_NOT_SET_HERE.llmRequest!, llm: 'in `mcpAuthorization` rules: only an `ai` backend sets it, and these rules run in an `mcp` backend' };

export function compileMcpAuthorization(config: McpAuthorizationConfig, ctx: CompileContext): PolicyInstance {
  const own = compileRules(config.rules, ctx.expr, ctx.fail, NOT_SET);
  // DECIDED 3: an empty rule list allows everything, so it has nothing to do per request.
  if (isEmptyRuleSet(own)) return {};
  return {
    onRequest(ex) {
      // Several levels (route, backend) concatenate: a deny at any level denies, allows OR across levels.
      const before = ex.get(ACTIVE_RULES);
      const rules = before === undefined ? own : concatRuleSets(before, own);
      ex.set(ACTIVE_RULES, rules);
      ex.set(MCP_AUTHORIZER, authorizerFor(rules, ex));
    },
    // Only the `mcp` backend asks the authorizer: in front of another (a `host` proxying an MCP server) the rules
    // would never run and every tool would stay visible (ADR 0176).
    requiresBackendProtocol: {
      protocol: 'mcp',
      message:
        '`mcpAuthorization` decides which MCP tools, prompts and resources a client sees, and only an `mcp` backend applies it; this route has another backend (or none), so its rules would never run: put it on a route whose backends are `mcp` backends, or use `authorization`',
      path: ctx.path,
    },
  };
}
