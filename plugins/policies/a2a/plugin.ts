import { definePolicy } from 'switchyard/sdk';
import schema from './schema.json' with { type: 'json' };
import type { A2aConfig } from './a2a.ts';
import { a2aDeadlineSection } from './deadline.ts';

export { a2aRequestAttribute } from './attribute.ts';
export type { A2aRequest } from './attribute.ts';

/**
 * `a2a`: classifies A2A traffic after the route's own answers (`requestRedirect`, `directResponse`) and before
 * the request is mirrored and sent (BEHAVIOUR.md §2.4 puts the classification after `requestRedirect`). Its
 * response hook rewrites agent cards and reads the JSON-RPC outcome for the access log.
 */
export default definePolicy<A2aConfig>({
  key: 'a2a',
  description: 'Mark the route as A2A traffic: rewrite agent cards to the gateway URL and log A2A methods and task states.',
  schema,
  attach: ['routePolicies', 'backendPolicies'],
  phase: 'dispatch',
  order: 5,
  // `config.defaultTimeouts.a2aBackendRequestTimeout`: the agents' default response deadline.
  configSections: [a2aDeadlineSection],
  async compile(config, ctx) {
    // The implementation loads only when a config uses this policy.
    const { compileA2a } = await import('./a2a.ts');
    const instance = compileA2a(config, ctx);
    return { ...instance, facets: { responseDeadlineMs: ctx.configSection(a2aDeadlineSection) } };
  },
});
