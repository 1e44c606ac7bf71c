import type { TracingConfig } from '../telemetry/tracing-config.ts';
import type { TlsSettings } from './listener-tls-settings.ts';
import type { SecureContext } from 'node:tls';
import type { AccessLogRules } from '../telemetry/access-log-rules.ts';
import type { BackendInstance, BackendSelector, Exchange, PolicyInstance, Reply, RouteInfo } from '../sdk/index.ts';
import type { Cooldown, FailoverPlan, UpstreamPlan } from '../exchange/upstream-plan.ts';
import type { BackendHealth, RouteHealth } from './backend-health.ts';
import type { AdminRouteHandler, OutlierDetectionFacet } from '../sdk/index.ts';
import type { RouteMetrics } from '../telemetry/metrics.ts';
import type { CompiledMatch } from './matchers.ts';
import type { RoutesForPath } from './route-index.ts';
import type { PathOptions } from '../exchange/normalize-path.ts';
import type { TrustedProxies } from '../exchange/client-address.ts';
import type { FrontendHttp2 } from './frontend-http.ts';
import type { NamedFileStamps } from '../config/named-files.ts';

/** A backend of a route with its own chain (backend-level policies) and upstream plan. */
export interface CompiledBackendRef {
  readonly weight: number;
  readonly instance: BackendInstance;
  /** Backend-level policies' request hooks, run after selection. */
  readonly requestHooks: readonly PolicyInstance[] | null;
  /** Response hooks for replies produced at or after this backend: backend's, then the route's. */
  readonly responseHooks: readonly PolicyInstance[] | null;
  readonly logHooks: readonly PolicyInstance[] | null;
  readonly plan: UpstreamPlan;
  /** Place in the route's `backends` (the index `RouteHealth` knows it by). */
  readonly index: number;
  /** Passive health state (kept across reloads) when `outlierDetection` applies; else null. */
  readonly health: BackendHealth | null;
  readonly outlier: OutlierDetectionFacet | null;
  /** `backend` label of health metrics and logs. */
  readonly label: string;
  /**
   * The retry policy when the route has other backends: the pipeline then sends each retry to another backend
   * (`plan.retry` keeps the body buffered but tries once). Null when retries stay on this backend.
   */
  readonly failover: FailoverPlan | null;
  /** Set under default failover (ADR 0039): while `until` is ahead the backend is skipped when picking. */
  readonly cooldown: Cooldown | null;
  /**
   * The pipeline may forward straight into the response (ADR 0051): the backend says `handle` only forwards
   * (`forwardsToTarget`), and no hook, retry, failover or `timeout` needs the reply as an object: response hooks
   * that edit the raw header list (`onResponseHeaders`, ADR 0071) are fine, and the backend's request hooks run
   * before it (ADR 0071).
   */
  readonly forwardsDirect: boolean;
  /** Every policy of the route and this backend promises not to read `ex.req` as a stream (`requestStream: false`). */
  readonly requestStreamFree: boolean;
}

export interface CompiledRoute {
  readonly info: RouteInfo;
  /** Null when the route has no `hostnames`. */
  readonly hostnameTest: ((hostname: string) => boolean) | null;
  /** Null when the route has no `matches` (matches everything, prefix `/`). */
  readonly matches: readonly CompiledMatch[] | null;
  readonly requestHooks: readonly PolicyInstance[] | null;
  readonly responseHooks: readonly PolicyInstance[] | null;
  readonly logHooks: readonly PolicyInstance[] | null;
  readonly backends: readonly CompiledBackendRef[];
  readonly totalWeight: number;
  /**
   * A route policy's choice of backends per request (`PolicyInstance.selectBackends`: the `ai` policy's virtual
   * models); null on every other route, which then picks by weight without a call.
   */
  readonly selectBackends: BackendSelector | null;
  /** Whether any backend has a `cooldown` (default failover, ADR 0039): picking then checks it. */
  readonly cooling: boolean;
  /**
   * Nothing but the kernel runs for a request on this route: no route policy hooks or backend selector, no health
   * bookkeeping, and every backend forwards directly (`forwardsDirect`). A traced request then never enters its
   * span's async context: the SERVER span is passed explicitly to its upstream attempt (ADR 0062).
   */
  readonly kernelOnly: boolean;
  /**
   * The lean server side may serve the route (ADR 0088 and its addendum): every backend forwards directly, no
   * selector or health bookkeeping, and every policy on the way (route and backends) promises not to read `ex.req`
   * as a stream (`requestStream: false`), each backend's target forwards into a response (`forwardInto`) and no
   * backend shapes the route's errors (`shapeError`). Decided here, read once per lean request (ADR 0093).
   */
  readonly leanSafe: boolean;
  /** Health bookkeeping when a backend of the route has `outlierDetection`; null otherwise (no cost per request). */
  readonly health: RouteHealth | null;
  /** The first backend's `shapeError` (guarded, ADR 0166), applied to the route's gateway-made error replies; null when none. */
  readonly shapeError: ((ex: Exchange, reply: Reply) => void) | null;
  /** Whole-request deadline in ms; 0 means none. */
  readonly requestTimeoutMs: number;
  readonly metrics: RouteMetrics;
}

export interface CompiledListener {
  readonly name: string;
  readonly hostname: string | undefined;
  readonly routes: readonly CompiledRoute[];
  /** The routes a request's path can select, in config order (route-index.ts): what route selection tries. */
  readonly routesFor: RoutesForPath;
  /** Replaced when the listener's files are renewed on disk (listener-certs.ts). */
  secureContext: SecureContext | undefined;
  /** PEM material of an HTTPS listener (the default certificate for clients without SNI); `ca`: `tls.root`. */
  tlsPem: { readonly cert: string; readonly key: string; readonly ca?: string } | undefined;
  /** The absolute paths of an HTTPS listener's files, read again when they change (ADR 0138). */
  readonly tlsFiles: { readonly cert: string; readonly key: string; readonly root?: string } | undefined;
  /** `tls.root` is set: a client certificate it verifies is required (mutual TLS). */
  readonly clientCertificates: boolean;
}

export interface CompiledBind {
  readonly port: number;
  /** The local address to listen on; undefined: every interface. */
  readonly address: string | undefined;
  readonly secure: boolean;
  readonly listeners: readonly CompiledListener[];
  /** Listener for a request hostname: exact, then the longest `*.suffix`, then one without hostname. */
  selectListener(hostname: string): CompiledListener | undefined;
  /** Listener whose certificate a TLS client naming `servername` (SNI, any case) gets: its own, else the first. */
  tlsListener(servername: string): CompiledListener | undefined;
  /** A TLS bind's versions and cipher suites (its HTTPS listeners agree on them, ADR 0140); undefined for cleartext. */
  readonly tlsSettings: TlsSettings | undefined;
}

/** The static `config:` block, with defaults applied. */
export interface StaticConfig {
  readonly adminAddr: string;
  readonly statsAddr: string;
  readonly readinessAddr: string;
  /** `rules`: `filter` and `fields` compiled (null: none). Applies on reload. */
  readonly logging: { level: 'debug' | 'info' | 'warn' | 'error'; format: 'json' | 'text'; accessLog: boolean; rules: AccessLogRules | null };
  readonly plugins: readonly string[];
  readonly drainTimeoutMs: number;
  /** `config.defaultTimeouts` in ms (0 = none): what a backend without a `timeout` policy gets (ADR 0019). */
  readonly defaultTimeouts: { readonly backendRequestMs: number; readonly streamIdleMs: number };
  /** Path normalisation before route selection (`mergeSlashes`, `escapedSlashes`); applies on reload. */
  readonly paths: PathOptions;
  /** `trustedProxies` compiled; null trusts no peer. Applies on reload. */
  readonly trustedProxies: TrustedProxies | null;
  /** node:http `headersTimeout` of the binds (408 when it passes). */
  readonly headerTimeoutMs: number;
  /** `config.upgradeProtocols`, lower-cased: the upgrades relayed (ADR 0118). Applies on reload. */
  readonly upgradeProtocols: readonly string[];
  /** node:http `maxConnections` of each bind; 0 means no cap. */
  readonly maxConnectionsPerBind: number;
  /** `config.workers` resolved (`auto`: the CPUs available); 1 runs no supervisor. Restart only. */
  readonly workers: number;
  /** `config.tracing`; null: no tracing (the SDK is never loaded). Restart only. */
  readonly tracing: TracingConfig | null;
  /** `config.adminUi`: whether `/ui` is served and the credentials it asks for. */
  readonly adminUi: AdminUiConfig;
  /** `frontendPolicies.http` (ADR 0158; not a `config` key): each new HTTP/2 client connection's settings. */
  readonly frontendHttp2?: FrontendHttp2;
}

export interface AdminUiConfig {
  readonly enabled: boolean;
  readonly basicAuth?: { readonly username: string; readonly password: string };
  readonly apiKey?: string;
  /** How long a plugin's admin endpoint may take to answer (`adminUi.endpointTimeout`, ADR 0155). */
  readonly endpointTimeoutMs: number;
}

/** One compiled config generation. Immutable once built; requests hold it from start to end. */
export class Snapshot {
  readonly generation: number;
  readonly binds: ReadonlyMap<number, CompiledBind>;
  readonly staticConfig: StaticConfig;
  /** The validated config as loaded (for `/config_dump`, redacted there). */
  readonly config: Record<string, unknown>;
  readonly disposables: readonly { dispose?(): void }[];
  readonly loadedAt = new Date();
  /** Plugin endpoints on the admin address (`CompileContext.adminRoute`), by prefix. */
  readonly adminRoutes: ReadonlyMap<string, AdminRouteHandler>;
  /** Files the plugins read for this config, with the version read: a new version reloads it (ADR 0184). */
  namedFiles: NamedFileStamps = new Map();
  /** Hears of each instance whose `dispose()` threw (the log line naming its plugin, ADR 0154). */
  private readonly disposeFailed: ((instance: object, err: unknown) => void) | undefined;
  private disposed = false;
  private inflight = 0;
  private retired = false;
  private onDrained: (() => void) | undefined;

  constructor(
    generation: number,
    binds: ReadonlyMap<number, CompiledBind>,
    staticConfig: StaticConfig,
    config: Record<string, unknown>,
    disposables: readonly { dispose?(): void }[],
    adminRoutes: ReadonlyMap<string, AdminRouteHandler> = new Map(),
    disposeFailed?: (instance: object, err: unknown) => void,
  ) {
    this.adminRoutes = adminRoutes;
    this.disposeFailed = disposeFailed;
    this.generation = generation;
    this.binds = binds;
    this.staticConfig = staticConfig;
    this.config = config;
    this.disposables = disposables;
  }

  acquire(): void {
    this.inflight++;
  }

  release(): void {
    if (--this.inflight === 0 && this.retired) this.onDrained?.();
  }

  get inFlight(): number {
    return this.inflight;
  }

  /** Resolves once no request holds this snapshot any more. */
  retire(): Promise<void> {
    this.retired = true;
    if (this.inflight === 0) return Promise.resolve();
    return new Promise((resolve) => {
      this.onDrained = resolve;
    });
  }

  /** Dispose the instances once (a retired snapshot, and again at stop, is disposed once). */
  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    disposeAll(this.disposables, this.disposeFailed);
  }
}

/**
 * Dispose each instance; one that throws neither keeps the rest alive nor replaces what the caller is reporting (a
 * failed load's config error, ADR 0144). `failed` hears of each failure.
 */
export function disposeAll(disposables: readonly { dispose?(): void }[], failed?: (instance: object, err: unknown) => void): void {
  for (const d of disposables) {
    try {
      // An `async dispose()` that rejects is a failure too, not an unhandled rejection ending the process (ADR 0154).
      const done: unknown = d.dispose?.();
      if (done !== undefined && typeof (done as PromiseLike<void>).then === 'function') (done as PromiseLike<void>).then(undefined, (err: unknown) => failed?.(d, err));
    } catch (err) {
      failed?.(d, err);
    }
  }
}
