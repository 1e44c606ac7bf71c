import type { Tracing, TracingHolder } from '../telemetry/tracing.ts';
import type { BackendSelector, PluginSpans, RouteBackend } from '../sdk/index.ts';
import type { SharedCells } from '../resources/shared-cells.ts';
import type { SharedCell, SharedFetches } from '../sdk/shared.ts';
import type { GatewayProcesses } from '../sdk/processes.ts';
import { isIP } from 'node:net';
import { resolve } from 'node:path';
import { compileAccessLogRules } from '../telemetry/access-log-rules.ts';
import type { RawLoggingRules } from '../telemetry/access-log-rules.ts';
import { createSecureContext } from 'node:tls';
import { ConfigError, ErrorCode, FILE_SIZE_LIMITS, connectUpstream, readSharedFile } from '../sdk/index.ts';
import type {
  AdminRouteHandler,
  BackendCompileContext,
  BackendInstance,
  BackendPlugin,
  ConfigIssue,
  ConfigPath,
  ConfigSection,
  HttpUpstreams,
  Logger,
  PolicyPlugin,
  PolicySet,
  ResourceCache,
  SlotPlugin,
} from '../sdk/index.ts';
import { didYouMean } from '../config/did-you-mean.ts';
import { formatPath } from '../config/config-source.ts';
import { configSectionPath } from '../config/assemble-schema.ts';
import type { PluginRegistry } from '../registry/registry.ts';
import type { GenerationalResources } from '../resources/resource-cache.ts';
import type { FailoverPlan, UpstreamPlan } from '../exchange/upstream-plan.ts';
import { BackendHealth, RouteHealth } from './backend-health.ts';
import type { EjectionCounter } from './backend-health.ts';
import { HealthChecker } from './health-checker.ts';
import type { CelExpressions } from '../expr/cel-expressions.ts';
import type { MetricsRegistry } from '../telemetry/metrics.ts';
import { compileHostnameTest, compileMatch } from './matchers.ts';
import type { MatchConfig } from './matchers.ts';
import { CompiledPolicySet, LayeredPolicySet } from './policy-set.ts';
import type { PolicyEntry } from './policy-set.ts';
import { Snapshot } from './snapshot.ts';
import type { CompiledBackendRef, CompiledBind, CompiledListener, CompiledRoute, StaticConfig } from './snapshot.ts';
import { resolveStaticConfig } from './static-config.ts';

type Obj = Record<string, unknown>;

/**
 * Replace an alias key by the plugin's real key in place, keeping key order, so `/config_dump` and logs show the
 * real identifier (NAMES.md). Paths in error messages still use what the user wrote.
 */
function renameKey(obj: Obj, from: string, to: string): void {
  if (from === to || !(from in obj)) return;
  const entries = Object.entries(obj);
  for (const k of Object.keys(obj)) delete obj[k];
  for (const [k, v] of entries) obj[k === from ? to : k] = v;
}

export interface CompileDeps {
  readonly registry: PluginRegistry;
  readonly resources: GenerationalResources;
  readonly metrics: MetricsRegistry;
  readonly logger: Logger;
  /** Directory relative file paths resolve against (the process's working directory, SPEC 5.1). */
  readonly cwd: string;
  readonly generation: number;
  readonly env?: NodeJS.ProcessEnv;
  readonly expressions: CelExpressions;
  /**
   * The upstream pools plugins reach through `ctx.http`, over this load's resource view. Made by the composition
   * root: upstream/ is a layer above compile/ (docs/adr/0029).
   */
  readonly upstreams: (resources: ResourceCache) => HttpUpstreams;
  /** State shared by the workers of the gateway (rate-limit cells, coalesced fetches). */
  readonly shared: { readonly cells: SharedCells; readonly fetches: SharedFetches; readonly processes: GatewayProcesses };
  /** The gateway's tracing (started after the first load, so read per call): `ctx.spans`. */
  readonly traces?: TracingHolder;
}

interface NamedSpec {
  readonly value: Obj;
  readonly path: ConfigPath;
}

/** Turns one validated config into a Snapshot, running every plugin's `compile` once. */
/** `ctx.spans` over the gateway's tracing, which starts after the first load. */
function pluginSpans(current: () => Tracing | null): PluginSpans {
  return {
    get enabled() {
      return current() !== null;
    },
    get captureMessageContent() {
      return current()?.captureMessageContent ?? false;
    },
    start: (name, kind, attributes) => current()?.pluginSpan(name, kind, attributes),
  };
}

class SnapshotCompiler {
  /** `ctx.spans`: one object per load, reading the gateway's tracing when a span is asked for. */
  private readonly spans: PluginSpans = pluginSpans(() => this.deps.traces?.tracing ?? null);

  private readonly deps: CompileDeps;
  private readonly issues: ConfigIssue[] = [];
  private readonly disposables: { dispose?(): void }[] = [];
  private readonly upstreams: HttpUpstreams;
  private readonly resourceView;
  private readonly named = new Map<string, NamedSpec>();
  /** Resolved `config:` sections of plugins (`configSections`), by name. */
  private readonly sections = new Map<string, unknown>();
  private staticConfig!: StaticConfig;
  /** `ctx.loadState`: plugin state for this load only. */
  private readonly loadStates = new Map<string, unknown>();
  /** `ctx.adminRoute`: plugin endpoints on the admin address. */
  private readonly adminRoutes = new Map<string, AdminRouteHandler>();

  constructor(deps: CompileDeps) {
    this.deps = deps;
    this.resourceView = deps.resources.forGeneration(deps.generation);
    this.upstreams = deps.upstreams(this.resourceView);
  }

  async compile(config: Obj): Promise<Snapshot> {
    const resolved = resolveStaticConfig(config.config as never, this.deps.env);
    const rawLogging = (config.config as { logging?: RawLoggingRules } | undefined)?.logging;
    const staticConfig: StaticConfig = { ...resolved, logging: { ...resolved.logging, rules: compileAccessLogRules(rawLogging, this.deps.expressions) } };
    this.resolveSections(config.config as Obj | undefined);
    this.staticConfig = staticConfig;
    const namedList = (config.backends ?? []) as Obj[];
    namedList.forEach((b, i) => {
      const name = b.name as string;
      if (this.named.has(name)) this.issue(['backends', i, 'name'], `backend name \`${name}\` is used twice`);
      else this.named.set(name, { value: b, path: ['backends', i] });
    });
    // Compile every named backend once on its own, so a broken unused one is still reported.
    for (const spec of this.named.values()) {
      const policies = await this.policySet('backendPolicies', spec.value.policies as Obj | undefined, [...spec.path, 'policies']);
      await this.backendValue(spec.value, spec.path, new LayeredPolicySet([policies]));
    }
    const binds = new Map<number, CompiledBind>();
    const bindList = (config.binds ?? []) as Obj[];
    for (let i = 0; i < bindList.length; i++) {
      const bind = bindList[i]!;
      const port = bind.port as number;
      if (binds.has(port)) {
        this.issue(['binds', i, 'port'], `port ${port} is bound twice`);
        continue;
      }
      const compiled = await this.bind(bind, ['binds', i]);
      if (compiled) binds.set(port, compiled);
    }
    if (this.issues.length > 0) {
      for (const d of this.disposables) d.dispose?.();
      throw new ConfigError(this.issues);
    }
    return new Snapshot(this.deps.generation, binds, staticConfig, config, this.disposables, this.adminRoutes);
  }

  /** Every installed plugin's `config:` sections, resolved for this load (their errors stop it, like the kernel's own). */
  private resolveSections(raw: Obj | undefined): void {
    const env = this.deps.env ?? process.env;
    for (const { plugin } of this.deps.registry.plugins()) {
      if (plugin.kind === 'slot') continue;
      for (const section of plugin.configSections ?? []) {
        const where = configSectionPath(section);
        if (this.sections.has(where)) continue;
        const value = section.parent === undefined ? raw?.[section.name] : (raw?.[section.parent] as Obj | undefined)?.[section.name];
        this.sections.set(where, section.resolve(value, env));
      }
    }
  }

  private issue(path: ConfigPath, message: string, atKey = false): void {
    this.issues.push({ code: ErrorCode.configInvalid, path, message, atKey });
  }

  /** Run a plugin's compile, turning its failures into positioned issues. */
  private async guarded<T>(path: ConfigPath, run: () => T | Promise<T>): Promise<T | undefined> {
    try {
      return await run();
    } catch (err) {
      if (err instanceof ConfigError) this.issues.push(...err.issues);
      else this.issue(path, (err as Error)?.message ?? String(err));
      return undefined;
    }
  }

  private context(path: ConfigPath, policies: PolicySet): BackendCompileContext {
    const logger = this.deps.logger.child({ config: formatPath(path) });
    const ctx: BackendCompileContext = {
      path,
      cwd: this.deps.cwd,
      logger,
      http: this.upstreams,
      resources: this.resourceView,
      sharedCell: (key, initial) => this.deps.shared.cells.cell(key, initial),
      sharedFetches: this.deps.shared.fetches,
      processes: this.deps.shared.processes,
      expr: this.deps.expressions.compilerAt(path),
      configSection: <T>(section: ConfigSection<T>): T => {
        const where = configSectionPath(section);
        if (!this.sections.has(where)) throw new Error(`no installed plugin contributes the \`config.${where}\` section`);
        return this.sections.get(where) as T;
      },
      defaultTimeouts: this.staticConfig.defaultTimeouts,
      policies,
      fail: (message, sub = []) => {
        throw new ConfigError({ code: ErrorCode.configInvalid, path: [...path, ...sub], message });
      },
      warn: (message, sub = []) => logger.warn(message, { at: formatPath([...path, ...sub]) }),
      compileBackend: async (value, sub) => {
        const instance = await this.backendValue(value, [...path, ...sub], policies);
        if (!instance) throw new ConfigError([]);
        return instance;
      },
      compileVariant: async <T>(slotRef: SlotPlugin<T> | string, value: Obj, sub: ConfigPath) => {
        const slot = typeof slotRef === 'string' ? slotRef : slotRef.name;
        const at = [...path, ...sub];
        const key = Object.keys(value).find((k) => this.deps.registry.lookup(slot, k));
        if (!key) throw new ConfigError({ code: ErrorCode.configInvalid, path: at, message: `no installed \`${slot}\` key found` });
        const plugin = this.deps.registry.lookup(slot, key)!.plugin as { key: string; compile(c: unknown, ctx: unknown): unknown };
        renameKey(value, key, plugin.key);
        const instance = (await plugin.compile(value[plugin.key], this.context([...at, key], policies))) as T;
        this.track(instance);
        return { key: plugin.key, instance };
      },
      compilePolicies: (slot, value, sub) => this.policySet(typeof slot === 'string' ? slot : slot.name, value, [...path, ...sub]),
      adminRoute: (prefix, handler) => {
        if (!/^\/[a-z0-9][a-z0-9_-]*$/.test(prefix) || prefix === '/config_dump') throw new Error(`\`${prefix}\` is not a usable admin endpoint prefix`);
        if (!this.adminRoutes.has(prefix)) this.adminRoutes.set(prefix, handler);
      },
      connect: (options) => connectUpstream(ctx, options),
      spans: this.spans,
      loadState: <T>(key: string, create: () => T): T => {
        if (!this.loadStates.has(key)) this.loadStates.set(key, create());
        return this.loadStates.get(key) as T;
      },
      counter: (name, help) => {
        if (!/^[a-zA-Z_:][a-zA-Z0-9_:]*$/.test(name)) throw new Error(`\`${name}\` is not a valid metric name`);
        return this.deps.metrics.counter(name, help);
      },
      histogram: (name, help, labelNames, buckets) => {
        if (!/^[a-zA-Z_:][a-zA-Z0-9_:]*$/.test(name)) throw new Error(`\`${name}\` is not a valid metric name`);
        return this.deps.metrics.histogram(name, help, labelNames, buckets);
      },
      namedBackend: async (name, sub) => {
        const spec = this.named.get(name);
        if (!spec) {
          const guess = didYouMean(name, this.named.keys());
          throw new ConfigError({
            code: ErrorCode.configInvalid,
            path: [...path, ...sub],
            message: `unknown backend \`${name}\`${guess ? `; did you mean \`${guess}\`?` : this.named.size ? `; named backends: ${[...this.named.keys()].join(', ')}` : ' (the top-level `backends` list is empty)'}`,
          });
        }
        const instance = await this.backendValue(spec.value, spec.path, policies);
        if (!instance) throw new ConfigError([]);
        return instance;
      },
    };
    return ctx;
  }

  private track(instance: unknown): void {
    if (instance && typeof (instance as { dispose?: unknown }).dispose === 'function') this.disposables.push(instance as { dispose(): void });
  }

  async policySet(slot: string, value: Obj | undefined, path: ConfigPath): Promise<CompiledPolicySet> {
    if (!value || Object.keys(value).length === 0) return CompiledPolicySet.EMPTY;
    const entries: PolicyEntry[] = [];
    const seen = new Map<string, string>();
    for (const [key, config] of Object.entries(value)) {
      const registered = this.deps.registry.lookup(slot, key);
      if (!registered || registered.plugin.kind !== 'policy') continue;
      const plugin = registered.plugin as PolicyPlugin;
      const previous = seen.get(plugin.key);
      if (previous) {
        this.issue([...path, key], `\`${key}\` and \`${previous}\` are the same policy; set only one`, true);
        continue;
      }
      seen.set(plugin.key, key);
      renameKey(value, key, plugin.key);
      const instance = await this.guarded([...path, key], () => plugin.compile(config, this.context([...path, key], new CompiledPolicySet([]))));
      if (!instance) continue;
      this.track(instance);
      entries.push({ key: plugin.key, plugin, instance });
    }
    return new CompiledPolicySet(entries);
  }

  private async backendValue(value: Obj, path: ConfigPath, policies: PolicySet): Promise<BackendInstance | undefined> {
    const key = Object.keys(value).find((k) => this.deps.registry.lookup('backend', k));
    if (!key) return undefined;
    const plugin = this.deps.registry.lookup('backend', key)!.plugin as BackendPlugin;
    renameKey(value, key, plugin.key);
    const instance = await this.guarded([...path, key], () => plugin.compile(value[plugin.key], this.context([...path, key], policies)));
    this.track(instance);
    return instance;
  }

  private async backendRef(ref: Obj, path: ConfigPath, routeSet: CompiledPolicySet, index: number, siblings: number, routeKey: string): Promise<CompiledBackendRef | undefined> {
    const rawRef = JSON.stringify(ref);
    let policyValue = ref.policies as Obj | undefined;
    const named = typeof ref.backend === 'string' ? this.named.get(ref.backend) : undefined;
    // A reference to a named backend brings that backend's policies; the reference's own win per key.
    if (typeof ref.backend === 'string') {
      const spec = named;
      if (spec?.value.policies) policyValue = { ...(spec.value.policies as Obj), ...(policyValue ?? {}) };
    }
    const backendSet = await this.policySet('backendPolicies', policyValue, [...path, 'policies']);
    const layered = new LayeredPolicySet([routeSet, backendSet]);
    const instance = await this.backendValue(ref, path, layered);
    if (!instance) return undefined;
    this.checkBackendProtocols(backendSet.entries, [instance]);
    const facets = layered.facets;
    // A `timeout` policy anywhere on the way (route or backend) replaces the default response deadline (ADR 0019).
    const defaults = this.staticConfig.defaultTimeouts;
    const ownDeadline = facets.attemptTimeoutMs !== undefined || facets.requestTimeoutMs !== undefined;
    const retry: FailoverPlan | null = facets.retry
      ? { attempts: facets.retry.attempts, codes: new Set(facets.retry.codes), backoffMs: facets.retry.backoffMs ?? 0 }
      : null;
    // With other backends on the route, retries go to another backend (the pipeline's loop, ADR 0023); the
    // forwarder tries once but still buffers the body so it can be sent again.
    // Without one, a backend that asks for failover (`ai`) gets it on a route with others: each tried once (ADR 0039).
    const failover =
      retry && siblings > 1 && retry.attempts > 0
        ? retry
        : !retry && siblings > 1 && instance.failover
          ? { attempts: siblings - 1, codes: new Set(instance.failover.codes), backoffMs: 0, once: true }
          : null;
    const plan: UpstreamPlan = {
      attemptTimeoutMs: facets.attemptTimeoutMs ?? 0,
      headersTimeoutMs: ownDeadline ? 0 : (instance.responseDeadlineMs ?? defaults.backendRequestMs),
      idleTimeoutMs: facets.streamIdleTimeoutMs ?? defaults.streamIdleMs,
      retry: failover ? { attempts: 0, codes: failover.codes, backoffMs: 0 } : retry,
      upstreamHooks: layered.upstreamHooks(),
    };
    const outlier = facets.outlierDetection ?? null;
    const check = facets.healthCheck ?? null;
    const label = typeof ref.backend === 'string' ? ref.backend : (instance.label ?? `backends[${index}]`);
    // Same route, same place, same backend config (a named one's included): the state survives the reload.
    const identity = `${routeKey}:${index}:${rawRef}:${named ? JSON.stringify(named.value) : ''}`;
    // In shared memory: every worker of the gateway counts into, and ejects from, the same state (ADR 0047).
    const health = outlier || check ? this.resourceView.get(`health:${identity}`, () => new BackendHealth(this.sharedState(`health:${identity}`, 6))) : null;
    if (check && health) {
      const target = instance.target;
      if (!target) {
        this.issue([...path, 'policies', 'healthCheck'], '`healthCheck` needs a backend that forwards to one address (`host`, a named `host` backend, `ai`)');
      } else {
        const routeName = routeKey.slice(routeKey.lastIndexOf('/') + 1);
        const key = `healthcheck:${identity}:${JSON.stringify(check)}`;
        this.resourceView.get(
          key,
          () => {
            const cell = this.sharedState(key, 4);
            const checker = new HealthChecker(target, check, health, { route: routeName, backend: label }, this.deps.logger, this.ejections(), cell);
            checker.start();
            return checker;
          },
          (c) => c.dispose(),
        );
      }
    }
    const responseHooks = [...backendSet.responseHooks(), ...routeSet.responseHooks()];
    const logHooks = [...backendSet.logHooks(), ...routeSet.logHooks()];
    const requestHooks = backendSet.requestHooks();
    return {
      weight: (ref.weight as number | undefined) ?? 1,
      instance,
      requestHooks,
      responseHooks: responseHooks.length ? responseHooks : null,
      logHooks: logHooks.length ? logHooks : null,
      plan,
      index,
      health,
      outlier,
      label,
      failover,
      // A backend that asks for failover (`ai`) cools down after a failure, also when a `retry` policy drives the
      // failover (then only a route policy's chosen order, `selectBackends`, tries each backend once and cools it).
      cooldown: failover?.once || (failover !== null && instance.failover) ? { until: 0 } : null,
      forwardsDirect:
        instance.forwardsToTarget === true &&
        requestHooks === null &&
        responseHooks.length === 0 &&
        failover === null &&
        plan.retry === null &&
        plan.upstreamHooks === null &&
        plan.attemptTimeoutMs === 0,
    };
  }

  /** Policies that act only on one backend protocol (token rate limits: `llm`) are refused in front of others. */
  private checkBackendProtocols(entries: readonly PolicyEntry[], backends: readonly BackendInstance[]): void {
    for (const e of entries) {
      const need = e.instance.requiresBackendProtocol;
      if (need && (backends.length === 0 || backends.some((b) => b.protocol !== need.protocol))) this.issue(need.path, need.message);
    }
  }

  /** The route policy that chooses backends per request (virtual models), given the route's backends; null when none does. */
  private async backendSelector(entries: readonly PolicyEntry[], refs: readonly CompiledBackendRef[], at: ConfigPath): Promise<BackendSelector | null> {
    let chosen: { key: string; selector: BackendSelector } | undefined;
    for (const e of entries) {
      if (!e.instance.selectBackends) continue;
      const backends: RouteBackend[] = refs.map((r) => ({ name: r.label, instance: r.instance }));
      const selector = await this.guarded([...at, e.key], () => e.instance.selectBackends!(backends));
      if (!selector) continue;
      if (chosen) this.issue([...at, e.key], `\`${e.key}\` and \`${chosen.key}\` both choose this route's backends per request; keep one`);
      else chosen = { key: e.key, selector };
    }
    return chosen?.selector ?? null;
  }

  /**
   * A shared cell of `n` zeros for health state this worker has not held before. On a reload (generation > 1) that
   * is a backend new to the config, so the cell is zeroed: cells are never freed, and a backend config that comes
   * back must start afresh as it would in one process. A worker's first load (a start, a restart) takes the cell as
   * it is: a restarted worker joins the ejections the others made.
   */
  private sharedState(key: string, n: number): SharedCell {
    const zeros = new Array<number>(n).fill(0);
    const cell = this.deps.shared.cells.cell(key, zeros);
    if (this.deps.generation > 1) {
      cell.lock();
      cell.values.set(zeros);
      cell.unlock();
    }
    return cell;
  }

  /** The counter of backends taken out of rotation (outlier detection and failed health checks). */
  private ejections(): EjectionCounter {
    return this.deps.metrics.counter('switchyard_backend_ejections_total', 'Backends taken out of rotation, by backend, route and reason (consecutive5xx, consecutiveGatewayFailure, healthCheck).');
  }

  private async route(route: Obj, path: ConfigPath, index: number, listener: string, bind: number): Promise<CompiledRoute | undefined> {
    const name = (route.name as string | undefined) ?? `route${index}`;
    const routeSet = await this.policySet('routePolicies', route.policies as Obj | undefined, [...path, 'policies']);
    const matches = (route.matches as MatchConfig[] | undefined)?.map((m) => compileMatch(m)) ?? null;
    const refs: CompiledBackendRef[] = [];
    const list = (route.backends ?? []) as Obj[];
    const key = `${bind}/${listener}/${name}`;
    for (let i = 0; i < list.length; i++) {
      const ref = await this.backendRef(list[i]!, [...path, 'backends', i], routeSet, refs.length, list.length, key);
      if (ref) refs.push(ref);
    }
    this.checkBackendProtocols(routeSet.entries, refs.map((r) => r.instance));
    const selectBackends = await this.backendSelector(routeSet.entries, refs, [...path, 'policies']);
    const health = refs.some((r) => r.health)
      ? new RouteHealth(refs, name, this.deps.logger, this.ejections())
      : null;
    const requestHooks = routeSet.requestHooks();
    const responseHooks = routeSet.responseHooks();
    const logHooks = routeSet.logHooks();
    const shaper = refs.find((r) => r.instance.shapeError)?.instance;
    return {
      info: Object.freeze({ name, key, listener, bind, namespace: route.namespace as string | undefined, ruleName: route.ruleName as string | undefined }),
      hostnameTest: Array.isArray(route.hostnames) && route.hostnames.length ? compileHostnameTest(route.hostnames as string[]) : null,
      matches,
      requestHooks,
      responseHooks: responseHooks.length ? responseHooks : null,
      logHooks: logHooks.length ? logHooks : null,
      backends: refs,
      totalWeight: refs.reduce((sum, r) => sum + r.weight, 0),
      selectBackends,
      cooling: refs.some((r) => r.cooldown !== null),
      kernelOnly: refs.length > 0 && refs.every((r) => r.forwardsDirect && r.logHooks === null) && requestHooks === null && selectBackends === null && health === null,
      health,
      shapeError: shaper ? shaper.shapeError!.bind(shaper) : null,
      requestTimeoutMs: routeSet.facets.requestTimeoutMs ?? 0,
      metrics: this.deps.metrics.route(String(bind), listener, name),
    };
  }

  /** A listener's PEM file (regular, at most FILE_SIZE_LIMITS.key); undefined after an issue at `at`. */
  private async readListenerFile(file: string, at: ConfigPath, label: string): Promise<string | undefined> {
    const full = resolve(this.deps.cwd, file);
    try {
      // Once per version for the gateway's workers.
      return await readSharedFile(this.deps.shared.fetches, full, FILE_SIZE_LIMITS.key);
    } catch (err) {
      this.issue(at, `cannot read the listener ${label} file \`${file}\` (${full}): ${(err as Error).message}`);
      return undefined;
    }
  }

  private async bind(bind: Obj, path: ConfigPath): Promise<CompiledBind | undefined> {
    const port = bind.port as number;
    // Checked here so --validate-only refuses what the listen would (a name or `999.1.1.1` fails in getaddrinfo).
    const address = bind.address as string | undefined;
    if (address !== undefined && isIP(address) === 0) {
      this.issue([...path, 'address'], `\`${address}\` is not an IP address (write one such as \`127.0.0.1\` or \`::1\`)`);
    }
    const listeners: CompiledListener[] = [];
    const rawListeners = (bind.listeners ?? []) as Obj[];
    let secure: boolean | undefined;
    const tlsParts: string[] = [];
    for (let li = 0; li < rawListeners.length; li++) {
      const l = rawListeners[li]!;
      const lpath = [...path, 'listeners', li];
      const name = (l.name as string | undefined) ?? `listener${li}`;
      const isHttps = l.protocol === 'HTTPS';
      if (secure !== undefined && secure !== isHttps) {
        this.issue([...lpath, 'protocol'], `a bind cannot mix HTTP and HTTPS listeners (port ${port})`);
        continue;
      }
      secure = isHttps;
      let secureContext;
      let tlsPem;
      if (isHttps) {
        const tls = l.tls as { cert: string; key: string } | undefined;
        if (!tls) {
          this.issue(lpath, 'an HTTPS listener needs `tls.cert` and `tls.key`');
          continue;
        }
        const cert = await this.readListenerFile(tls.cert, [...lpath, 'tls', 'cert'], 'certificate');
        const key = await this.readListenerFile(tls.key, [...lpath, 'tls', 'key'], 'private key');
        if (cert === undefined || key === undefined) continue;
        try {
          secureContext = createSecureContext({ cert, key });
          tlsPem = { cert, key };
          tlsParts.push(`${l.hostname ?? ''}:${cert}:${key}`);
        } catch (err) {
          this.issue([...lpath, 'tls'], `cannot load the listener certificate: ${(err as Error).message}`);
          continue;
        }
      }
      const routes: CompiledRoute[] = [];
      const rawRoutes = (l.routes ?? []) as Obj[];
      for (let ri = 0; ri < rawRoutes.length; ri++) {
        const r = await this.route(rawRoutes[ri]!, [...lpath, 'routes', ri], ri, name, port);
        if (r) routes.push(r);
      }
      listeners.push({ name, hostname: (l.hostname as string | undefined)?.toLowerCase(), routes, secureContext, tlsPem });
    }
    const exact = new Map<string, CompiledListener>();
    const wildcards: { suffix: string; listener: CompiledListener }[] = [];
    let fallback: CompiledListener | undefined;
    for (const l of listeners) {
      if (!l.hostname) fallback ??= l;
      else if (l.hostname.startsWith('*.')) wildcards.push({ suffix: l.hostname.slice(1), listener: l });
      else if (!exact.has(l.hostname)) exact.set(l.hostname, l);
    }
    wildcards.sort((a, b) => b.suffix.length - a.suffix.length);
    const single = listeners.length === 1 && !listeners[0]!.hostname ? listeners[0] : undefined;
    return {
      port,
      address: bind.address as string | undefined,
      secure: secure ?? false,
      listeners,
      tlsKey: tlsParts.join('|'),
      selectListener: single
        ? () => single
        : (hostname) => {
            const hit = exact.get(hostname);
            if (hit) return hit;
            for (const w of wildcards) if (hostname.length > w.suffix.length && hostname.endsWith(w.suffix)) return w.listener;
            return fallback;
          },
    };
  }
}

/** Compile a validated config into a Snapshot. Throws ConfigError (paths, not positions) when plugins refuse it. */
export function compileSnapshot(config: Record<string, unknown>, deps: CompileDeps): Promise<Snapshot> {
  return new SnapshotCompiler(deps).compile(config);
}
