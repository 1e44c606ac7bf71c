// A test backend that forwards to one upstream and behaves as its `mode` says, served on one route per mode: the
// scaffolding the SDK exchange tests (forward, readBodyInto) share.
import { fullPreset } from '../../plugins/presets/full.ts';
import { startRoutesGateway } from './gateway.ts';
import type { RoutesGateway } from './gateway.ts';

/** The config of a mode backend: the upstream's host:port, the behaviour under test, policies run on a view. */
export interface ModeBackendConfig<M extends string> {
  host: string;
  mode: M;
  policies?: Record<string, unknown>;
}

/** The JSON Schema of {@link ModeBackendConfig} for `modes`. */
export function modeBackendSchema(modes: readonly string[], what: string): Record<string, unknown> {
  return {
    type: 'object',
    description: 'Test backend.',
    properties: {
      host: { type: 'string', description: 'host:port of the upstream.' },
      mode: { enum: modes, description: what },
      policies: { 'x-slot': 'mcpTargetPolicies', description: 'Policies run on the view.' },
    },
    required: ['host', 'mode'],
    additionalProperties: false,
  };
}

/** One route of a mode gateway: requests under `/<mode>` go to the backend in that mode. */
export interface ModeRoute {
  readonly mode: string;
  /** The route's own policies. */
  readonly routePolicies?: Record<string, unknown>;
  /** The backend's `policies` (run on the view it derives). */
  readonly policies?: Record<string, unknown>;
}

/** The full preset plus `backend` (registered under `key`), one route per mode, forwarding to `upstreamPort`. */
export function startModeGateway(backend: unknown, key: string, upstreamPort: number, routes: readonly ModeRoute[]): Promise<RoutesGateway> {
  return startRoutesGateway(
    routes.map((r) => ({
      name: r.mode,
      matches: [{ path: { pathPrefix: `/${r.mode}` } }],
      ...(r.routePolicies ? { policies: r.routePolicies } : {}),
      backends: [{ [key]: { host: `127.0.0.1:${upstreamPort}`, mode: r.mode, ...(r.policies ? { policies: r.policies } : {}) } }],
    })),
    { preset: [...fullPreset, backend] },
  );
}
