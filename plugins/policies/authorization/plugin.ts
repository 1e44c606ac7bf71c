import { definePolicy, jsonErrorReply } from 'switchyard/sdk';
import schema from './schema.json' with { type: 'json' };
import { compileRules, decide } from './rules.ts';
import type { RuleConfig } from './rules.ts';

interface AuthorizationConfig {
  rules: RuleConfig[];
}

/** `authorization`: CEL allow/deny/require rules decided per request (BEHAVIOUR.md §5.5, DECIDED 3); 403 on deny. */
export default definePolicy<AuthorizationConfig>({
  key: 'authorization',
  description: 'Allow or deny requests with CEL rules (source address ranges, headers, JWT claims, API key metadata); 403 when denied.',
  schema,
  attach: ['routePolicies', 'backendPolicies'],
  phase: 'authz',
  // After extAuthz (10): the external decision comes first, as in the reference gateway.
  order: 20,
  compile(config, ctx) {
    const rules = compileRules(config.rules, ctx.expr, ctx.fail);
    if (rules.allow.length + rules.deny.length + rules.require.length === 0) return {};
    return {
      onRequest(ex) {
        if (decide(rules, ex)) return undefined;
        ex.logField('authz', 'denied');
        return jsonErrorReply(403, 'forbidden', 'authorization failed');
      },
    };
  },
});
