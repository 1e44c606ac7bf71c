import { definePolicy, parseDuration } from 'switchyard/sdk';
import schema from './schema.json' with { type: 'json' };

interface HealthCheckConfig {
  path: string;
  interval?: string;
  timeout?: string;
  unhealthyThreshold?: number;
  healthyThreshold?: number;
}

/**
 * `healthCheck`: active probes of a backend. The kernel runs them (one timer per backend, kept across reloads
 * while the backend and these settings are unchanged) and skips a failing backend in selection (docs/adr/0023).
 */
export default definePolicy<HealthCheckConfig>({
  key: 'healthCheck',
  description: 'Probe each backend with GET `path` on an interval and keep failing ones out of rotation.',
  schema,
  attach: ['routePolicies', 'backendPolicies'],
  phase: 'dispatch',
  order: 56,
  compile(config, ctx) {
    const interval = config.interval !== undefined ? parseDuration(config.interval)! : 10_000;
    const timeout = config.timeout !== undefined ? parseDuration(config.timeout)! : 1_000;
    if (interval <= 0) ctx.fail('`interval` must be greater than zero', ['interval']);
    if (timeout <= 0) ctx.fail('`timeout` must be greater than zero', ['timeout']);
    return {
      facets: {
        healthCheck: {
          path: config.path,
          intervalMs: interval,
          timeoutMs: timeout,
          unhealthyThreshold: config.unhealthyThreshold ?? 2,
          healthyThreshold: config.healthyThreshold ?? 1,
        },
      },
    };
  },
});
