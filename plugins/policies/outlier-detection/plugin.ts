import { definePolicy, parseDuration } from 'switchyard/sdk';
import schema from './schema.json' with { type: 'json' };

interface OutlierDetectionConfig {
  consecutive5xx?: number;
  consecutiveGatewayFailure?: number;
  baseEjectionTime?: string;
  maxEjectionTime?: string;
  maxEjectionPercent?: number;
}

/**
 * `outlierDetection`: passive health of each backend of a route. The kernel owns the state (it picks backends and
 * keeps the counts across reloads); this plugin only sets the thresholds (docs/adr/0023).
 */
export default definePolicy<OutlierDetectionConfig>({
  key: 'outlierDetection',
  description: 'Eject a backend from weighted selection after consecutive failures, with growing ejection times.',
  schema,
  attach: ['routePolicies', 'backendPolicies'],
  phase: 'dispatch',
  order: 55,
  compile(config, ctx) {
    const base = config.baseEjectionTime !== undefined ? parseDuration(config.baseEjectionTime)! : 30_000;
    const max = config.maxEjectionTime !== undefined ? parseDuration(config.maxEjectionTime)! : Math.max(300_000, base);
    if (base <= 0) ctx.fail('`baseEjectionTime` must be greater than zero', ['baseEjectionTime']);
    if (max < base) ctx.fail('`maxEjectionTime` must not be shorter than `baseEjectionTime`', ['maxEjectionTime']);
    return {
      facets: {
        outlierDetection: {
          consecutive5xx: config.consecutive5xx ?? 5,
          consecutiveGatewayFailure: config.consecutiveGatewayFailure ?? 5,
          baseEjectionMs: base,
          maxEjectionMs: max,
          maxEjectionPercent: config.maxEjectionPercent ?? 10,
        },
      },
    };
  },
});
