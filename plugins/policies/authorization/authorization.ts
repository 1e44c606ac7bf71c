import { CEL_NOT_SET_BEFORE_BACKEND, jsonErrorReply } from 'switchyard/sdk';
import type { CompileContext, PolicyInstance } from 'switchyard/sdk';
import { compileRules, decide } from './rules.ts';
import type { RuleConfig } from './rules.ts';

export interface AuthorizationConfig {
  rules: RuleConfig[];
}

/** Compile one `authorization` policy: its CEL rules; a policy without rules does nothing. */
export function compileAuthorization(config: AuthorizationConfig, ctx: CompileContext): PolicyInstance {
  // Decided on the request, before any backend: `mcp`, `llmRequest` and `llm` are never set here (ADR 0176).
  const rules = compileRules(config.rules, ctx.expr, ctx.fail, CEL_NOT_SET_BEFORE_BACKEND);
  if (rules.allow.length + rules.deny.length + rules.require.length === 0) return {};
  return {
    onRequest(ex) {
      if (decide(rules, ex)) return undefined;
      ex.logField('authz', 'denied');
      return jsonErrorReply(403, 'forbidden', 'authorization failed');
    },
  };
}
