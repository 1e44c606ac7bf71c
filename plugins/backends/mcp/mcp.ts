import { createHash } from 'node:crypto';
import { parseDuration } from 'switchyard/sdk';
import type { BackendCompileContext, BackendInstance, Reply } from 'switchyard/sdk';
import { mcpTargetPoliciesSlot, mcpTransportSlot } from '../../lib/slots/mcp.ts';
import { McpEndpoint } from './endpoint.ts';
import { Front20251125 } from './revisions/2025-11-25/front.ts';
import { LegacySseFront } from './revisions/2025-11-25/sse-front.ts';
import { Front20260728 } from './revisions/2026-07-28/front.ts';
import type { BackendRuntime } from './runtime.ts';
import { mcpMetrics } from './metrics.ts';
import { sessionSection } from './session-key.ts';
import { SessionStore } from './session-store.ts';
import { keptTombstones } from './tombstones.ts';
import { fingerprint } from './session-token.ts';
import { OriginGuard } from './origin-check.ts';
import { authorizeTargets } from './target-authorizer.ts';
import { declaredNames, DEFAULT_STARTUP_TIMEOUT_MS } from './target.ts';
import { prefixRefusedByLlms } from './naming.ts';
import type { CompiledTarget } from './target.ts';

export interface McpTargetConfig {
  name: string;
  policies?: Record<string, unknown>;
  startupTimeout?: string;
  [transport: string]: unknown;
}

export interface McpBackendConfig {
  targets: McpTargetConfig[];
  statefulMode?: 'stateful' | 'stateless';
  prefixMode?: 'always' | 'conditional';
  failureMode?: 'failClosed' | 'failOpen';
  sessionIdleTimeout?: string;
  allowedOrigins?: string[];
  maxSessions?: number;
  maxPendingRequests?: number;
}

const DEFAULT_IDLE_MS = 30 * 60 * 1000;
/** Live client sessions of one `mcp` backend when `maxSessions` is not set (docs/security.md). */
export const DEFAULT_MAX_SESSIONS = 1024;
/** Client requests in progress per session when `maxPendingRequests` is not set. */
export const DEFAULT_MAX_PENDING_REQUESTS = 128;

export async function compileMcpBackend(config: McpBackendConfig, ctx: BackendCompileContext): Promise<BackendInstance> {
  const print = fingerprint(config);
  const targets: CompiledTarget[] = [];
  const seen = new Map<string, number>();
  for (let i = 0; i < config.targets.length; i++) {
    const t = config.targets[i]!;
    if (seen.has(t.name)) ctx.fail(`target name \`${t.name}\` is already used by targets[${seen.get(t.name)}]; names must be unique`, ['targets', i, 'name']);
    seen.set(t.name, i);
    const own = await ctx.compilePolicies(mcpTargetPoliciesSlot, t.policies, ['targets', i, 'policies']);
    // The target's own policies win per key over the route's and backend's (SPEC: "merged with and overriding").
    const policies = ctx.policies.layer(own);
    const startupTimeoutMs = t.startupTimeout !== undefined ? parseDuration(t.startupTimeout)! : DEFAULT_STARTUP_TIMEOUT_MS;
    if (startupTimeoutMs <= 0) ctx.fail('`startupTimeout` must be greater than zero', ['targets', i, 'startupTimeout']);
    const { startupTimeout: _s, ...variant } = t;
    const { instance } = await ctx.compileVariant(mcpTransportSlot, variant, ['targets', i]);
    await instance.configure?.(policies);
    targets.push({
      name: t.name,
      transport: instance,
      policies,
      requestPolicies: own.hasRequestHooks ? own : undefined,
      requestTimeoutMs: own.facets.requestTimeoutMs ?? policies.facets.attemptTimeoutMs ?? 0,
      requestTimeoutSource: own.facets.requestTimeoutMs !== undefined ? 'timeout.requestTimeout' : 'timeout.backendRequestTimeout',
      startupTimeoutMs,
      names: declaredNames(),
    });
  }
  // Names MCP allows and the reference accepts, but LLM APIs refuse once prefixed: a warning, not an error (ADR 0143).
  if (config.targets.length > 1 || config.prefixMode === 'always') {
    config.targets.forEach((t, i) => {
      const problem = prefixRefusedByLlms(t.name);
      if (problem !== undefined) ctx.warn(problem, ['targets', i, 'name']);
    });
  }
  const idleMs = config.sessionIdleTimeout !== undefined ? parseDuration(config.sessionIdleTimeout)! : DEFAULT_IDLE_MS;
  if (idleMs <= 0) ctx.fail('`sessionIdleTimeout` must be greater than zero', ['sessionIdleTimeout']);
  const sessionKey = ctx.configSection(sessionSection);
  const keyId = createHash('sha256').update(sessionKey).digest('hex').slice(0, 16);
  // Keyed by the backend's whole config (and the sealing key): a reload that keeps it unchanged keeps its sessions.
  // A store made again under a key it had before (the backend changed and changed back) refuses what it ended.
  const storeKey = `mcp-sessions:${print.toString('hex')}:${keyId}`;
  const tombstones = keptTombstones(ctx.sharedEvents);
  const store = ctx.resources.get(
    storeKey,
    () =>
      new SessionStore(
        idleMs,
        config.maxSessions ?? DEFAULT_MAX_SESSIONS,
        ctx.logger,
        { events: ctx.sharedEvents, topic: `mcp-ended:${print.toString('hex')}:${keyId}` },
        tombstones.of(storeKey),
      ),
    (s) => {
      tombstones.left(storeKey);
      return s.dispose();
    },
  );
  const rt: BackendRuntime = {
    targets,
    multiplexed: targets.length > 1 || config.prefixMode === 'always',
    failOpen: config.failureMode === 'failOpen',
    stateful: config.statefulMode !== 'stateless',
    logger: ctx.logger,
    key: sessionKey,
    aad: print,
    maxPendingRequests: config.maxPendingRequests ?? DEFAULT_MAX_PENDING_REQUESTS,
    metrics: mcpMetrics(ctx),
    spans: ctx.spans,
  };
  const authorizing = targets.filter((t) => t.requestPolicies);
  const origins = new OriginGuard(config.allowedOrigins);
  // Revision adapters, newest first (ADR 0031).
  const streamable = new McpEndpoint([new Front20260728(rt, store), new Front20251125(rt, store)]);
  const legacy = new LegacySseFront(rt, store);
  return {
    protocol: 'mcp',
    // The legacy SSE transport answers on exactly `/sse` (after rewrites), as the reference does; all else is streamable HTTP.
    handle: (ex) => {
      // DNS-rebinding protection first (ADR 0010): a refused browser origin learns nothing, not even a session's state.
      const refused = origins.check(ex);
      if (refused) return refused;
      const serve = (): Promise<Reply> | Reply => (ex.path === '/sse' ? legacy.handle(ex) : streamable.handle(ex));
      // Only POSTs carry calls to authorize.
      return ex.method === 'POST' && authorizing.length > 0 ? authorizeTargets(authorizing, ex).then(serve) : serve();
    },
  };
}
