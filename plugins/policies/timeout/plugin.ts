import { definePolicy, parseDuration } from 'switchyard/sdk';
import schema from './schema.json' with { type: 'json' };

interface TimeoutConfig {
  requestTimeout?: string;
  backendRequestTimeout?: string;
  streamIdleTimeout?: string;
}

/**
 * `timeout`: deadlines carried out by the kernel (route timer, per-attempt abort, body idle timer); this plugin only
 * sets them. Either request deadline replaces `config.defaultTimeouts` for the route or backend (ADR 0019).
 */
export default definePolicy<TimeoutConfig>({
  key: 'timeout',
  description: 'Whole-request and per-upstream-attempt deadlines (504 when exceeded).',
  schema,
  attach: ['routePolicies', 'backendPolicies', 'mcpTargetPolicies'],
  phase: 'dispatch',
  // Only sets deadlines the kernel carries out; never reads `ex.req`: its routes may be served lean (ADR 0088).
  requestStream: false,
  order: 50,
  compile(config, ctx) {
    const request = config.requestTimeout !== undefined ? parseDuration(config.requestTimeout)! : undefined;
    const attempt = config.backendRequestTimeout !== undefined ? parseDuration(config.backendRequestTimeout)! : undefined;
    if (request === 0) ctx.fail('`requestTimeout` must be greater than zero (omit it for no deadline)', ['requestTimeout']);
    if (attempt === 0) ctx.fail('`backendRequestTimeout` must be greater than zero (omit it for no deadline)', ['backendRequestTimeout']);
    // `0s` is allowed here: it turns the stream idle deadline off for long-silent streams (ADR 0019).
    const idle = config.streamIdleTimeout !== undefined ? parseDuration(config.streamIdleTimeout)! : undefined;
    return { facets: { requestTimeoutMs: request, attemptTimeoutMs: attempt, streamIdleTimeoutMs: idle } };
  },
});
