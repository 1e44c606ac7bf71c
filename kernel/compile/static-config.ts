import { ConfigError, ErrorCode, parseDuration } from '../sdk/index.ts';
import type { ConfigIssue } from '../sdk/index.ts';
import { ADDRESS_PATTERN } from '../config/skeleton-schema.ts';
import type { StaticConfig } from './snapshot.ts';
import { usableCpus } from './usable-cpus.ts';
import { ADMIN_HANDLER_DEADLINE_MS } from './admin-handler.ts';
import { defaultMaxConnections } from './open-files.ts';
import { compileTrustedProxies, trustedProxyProblem } from '../exchange/client-address.ts';
import type { TrustedProxies } from '../exchange/client-address.ts';
import type { RawLoggingRules } from '../telemetry/access-log-rules.ts';
import { resolveTracing } from '../telemetry/tracing-config.ts';
import type { RawTracing } from '../telemetry/tracing-config.ts';

interface RawStatic {
  adminAddr?: string;
  statsAddr?: string;
  readinessAddr?: string;
  logging?: { level?: StaticConfig['logging']['level']; format?: StaticConfig['logging']['format']; accessLog?: boolean } & RawLoggingRules;
  plugins?: string[];
  drainTimeout?: string;
  /** The reference's name for `drainTimeout`. */
  connectionTerminationDeadline?: string;
  defaultTimeouts?: { backendRequestTimeout?: string; streamIdleTimeout?: string };
  mergeSlashes?: boolean;
  escapedSlashes?: 'reject' | 'keep';
  trustedProxies?: string[];
  headerTimeout?: string;
  upgradeProtocols?: string[];
  maxConnectionsPerBind?: number;
  workers?: 'auto' | number;
  workerThreads?: number;
  tracing?: RawTracing;
  adminUi?: { enabled?: boolean; basicAuth?: { username: string; password: string }; apiKey?: string; endpointTimeout?: string };
}

/** `config.trustedProxies`, each entry checked (the schema only says "string"). */
function trustedProxies(raw: RawStatic): TrustedProxies | null {
  const entries = raw.trustedProxies ?? [];
  const issues: ConfigIssue[] = [];
  for (let i = 0; i < entries.length; i++) {
    const problem = trustedProxyProblem(entries[i]!);
    if (problem) issues.push({ code: ErrorCode.configInvalid, path: ['config', 'trustedProxies', i], message: problem });
  }
  if (issues.length) throw new ConfigError(issues);
  return compileTrustedProxies(entries);
}

/** `config.adminUi.endpointTimeout` (ADR 0155): a bound, so `0s` (which would answer every request 504) is refused. */
function adminEndpointTimeout(r: RawStatic): number {
  const value = r.adminUi?.endpointTimeout;
  const ms = value === undefined ? ADMIN_HANDLER_DEADLINE_MS : (parseDuration(value) ?? ADMIN_HANDLER_DEADLINE_MS);
  if (ms > 0) return ms;
  throw new ConfigError({ code: ErrorCode.configInvalid, path: ['config', 'adminUi', 'endpointTimeout'], message: 'must be more than `0s`: an admin endpoint needs time to answer' });
}

/**
 * Default upstream deadlines (ADR 0019) for backends whose route sets no `timeout`: Envoy's 15 s route timeout for
 * plain proxying (a backend may bring its own: the `ai` backend's `llmBackendRequestTimeout`, a property it adds to
 * `defaultTimeouts`); a response body may go silent for at most 5 minutes (Envoy's stream idle timeout), so streams
 * are never cut while bytes flow.
 */
export const DEFAULT_TIMEOUTS = Object.freeze({ backendRequestMs: 15_000, streamIdleMs: 300_000 });

/** `config.upgradeProtocols` when not set: WebSocket only (Envoy relays only the upgrade types enabled, ADR 0118). */
const DEFAULT_UPGRADE_PROTOCOLS: readonly string[] = Object.freeze(['websocket']);

const durationOr = (value: string | undefined, fallback: number): number => (value === undefined ? fallback : (parseDuration(value) ?? fallback));

const ADDRESS = new RegExp(ADDRESS_PATTERN, 'u');

/** An address from the environment (which overrides the file's), checked as the schema checks the file's. */
function envAddress(env: NodeJS.ProcessEnv, name: string, field: string): string | undefined {
  const value = env[name];
  if (value === undefined) return undefined;
  if (!ADDRESS.test(value)) {
    throw new ConfigError({
      code: ErrorCode.configEnv,
      path: ['config', field],
      message: `the \`${name}\` environment variable must be \`host:port\` (a port 0-65535) or \`off\`, got ${JSON.stringify(value.length > 60 ? `${value.slice(0, 57)}...` : value)}`,
    });
  }
  return value;
}

/** `config.workers` (or the reference's `workerThreads`): how many worker threads serve the binds. */
export function resolveWorkerCount(r: RawStatic): number {
  if (r.workers !== undefined && r.workerThreads !== undefined && r.workers !== r.workerThreads) {
    throw new ConfigError({
      code: ErrorCode.configInvalid,
      path: ['config', 'workerThreads'],
      message: '`workerThreads` is another name for `workers` and they differ here: give one of the two',
    });
  }
  const n = r.workers ?? r.workerThreads ?? 1;
  return n === 'auto' ? Math.min(64, usableCpus()) : n;
}

/**
 * `config.drainTimeout` (or the reference's `connectionTerminationDeadline`); without either, the reference's default
 * from `TERMINATION_GRACE_PERIOD_SECONDS` (less 5 s, less 1 s when 10 or less: time left for the last lines, ADR 0184),
 * else 10 s.
 */
export function resolveDrainTimeout(r: RawStatic, env: NodeJS.ProcessEnv): number {
  const { drainTimeout, connectionTerminationDeadline: other } = r;
  if (drainTimeout !== undefined && other !== undefined && parseDuration(drainTimeout) !== parseDuration(other)) {
    throw new ConfigError({
      code: ErrorCode.configInvalid,
      path: ['config', 'connectionTerminationDeadline'],
      message: '`connectionTerminationDeadline` is another name for `drainTimeout` and they differ here: give one of the two',
    });
  }
  const given = drainTimeout ?? other;
  if (given !== undefined) return parseDuration(given) ?? 10_000;
  const grace = env.TERMINATION_GRACE_PERIOD_SECONDS?.trim();
  if (grace === undefined || !/^\d{1,6}$/.test(grace)) return 10_000;
  const seconds = Number(grace);
  return Math.max(0, seconds - (seconds <= 10 ? 1 : 5)) * 1000;
}

/** The `config:` block with defaults (BEHAVIOUR.md DECIDED 16). Environment variables override the addresses. */
export function resolveStaticConfig(raw: RawStatic | undefined, env: NodeJS.ProcessEnv = process.env): StaticConfig {
  const r = raw ?? {};
  const workers = resolveWorkerCount(r);
  return {
    adminAddr: envAddress(env, 'ADMIN_ADDR', 'adminAddr') ?? r.adminAddr ?? '127.0.0.1:15000',
    statsAddr: envAddress(env, 'STATS_ADDR', 'statsAddr') ?? r.statsAddr ?? '0.0.0.0:15020',
    readinessAddr: envAddress(env, 'READINESS_ADDR', 'readinessAddr') ?? r.readinessAddr ?? '0.0.0.0:15021',
    logging: { level: r.logging?.level ?? 'info', format: r.logging?.format ?? 'text', accessLog: r.logging?.accessLog ?? true, rules: null },
    plugins: r.plugins ?? [],
    drainTimeoutMs: resolveDrainTimeout(r, env),
    defaultTimeouts: {
      backendRequestMs: durationOr(r.defaultTimeouts?.backendRequestTimeout, DEFAULT_TIMEOUTS.backendRequestMs),
      streamIdleMs: durationOr(r.defaultTimeouts?.streamIdleTimeout, DEFAULT_TIMEOUTS.streamIdleMs),
    },
    paths: { mergeSlashes: r.mergeSlashes ?? true, rejectEscapedSlashes: (r.escapedSlashes ?? 'reject') === 'reject' },
    trustedProxies: trustedProxies(r),
    headerTimeoutMs: r.headerTimeout ? (parseDuration(r.headerTimeout) ?? 60_000) : 60_000,
    upgradeProtocols: r.upgradeProtocols ? r.upgradeProtocols.map((p) => p.toLowerCase()) : DEFAULT_UPGRADE_PROTOCOLS,
    maxConnectionsPerBind: r.maxConnectionsPerBind ?? defaultMaxConnections(workers),
    workers,
    tracing: resolveTracing(r.tracing, env),
    adminUi: { enabled: r.adminUi?.enabled ?? true, basicAuth: r.adminUi?.basicAuth, apiKey: r.adminUi?.apiKey, endpointTimeoutMs: adminEndpointTimeout(r) },
  };
}
