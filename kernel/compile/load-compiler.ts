import type { Tracing, TracingHolder } from '../telemetry/tracing.ts';
import type { PluginSpans } from '../sdk/index.ts';
import { localCell } from '../resources/shared-cells.ts';
import type { SharedCells } from '../resources/shared-cells.ts';
import type { SharedCell, SharedEvents, SharedFetches } from '../sdk/shared.ts';
import type { GatewayProcesses } from '../sdk/processes.ts';
import { ConfigError, ErrorCode, settleWithin } from '../sdk/index.ts';
import { formatPath } from '../config/config-source.ts';
import type {
  AdminRouteHandler,
  BackendCompileContext,
  BackendInstance,
  BackendPlugin,
  ConfigIssue,
  ConfigPath,
  HttpUpstreams,
  LoadedConfig,
  LoadedRoute,
  Logger,
  PolicyPlugin,
  PolicySet,
  ResourceCache,
  SlotPlugin,
} from '../sdk/index.ts';
import { configSectionPath } from '../config/assemble-schema.ts';
import type { RouteVariables } from './route-variables.ts';
import { describeSource } from '../registry/registry.ts';
import type { PluginRegistry, RegisteredPlugin } from '../registry/registry.ts';
import type { GenerationalResources } from '../resources/resource-cache.ts';
import type { EjectionCounter } from './backend-health.ts';
import type { CelExpressions } from '../expr/cel-expressions.ts';
import type { MetricsRegistry } from '../telemetry/metrics.ts';
import { ownInstance, pluginOwner } from './plugin-owner.ts';
import type { PluginOwner } from './plugin-owner.ts';
import { taggedVariant } from './tagged-variant.ts';
import { CompiledPolicySet } from './policy-set.ts';
import type { PolicyEntry } from './policy-set.ts';
import type { StaticConfig } from './snapshot.ts';
import { pluginContext } from './plugin-context.ts';
import { NamedFiles } from '../config/named-files.ts';

/** How long a third-party plugin's compile may take before the load fails naming it (ADR 0144). */
const PLUGIN_COMPILE_DEADLINE_MS = 60_000;

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
  /** The other workers serve this config already: take its shared state as it is (`sharedState`). */
  readonly joins?: boolean;
  readonly env?: NodeJS.ProcessEnv;
  readonly expressions: CelExpressions;
  /**
   * The upstream pools plugins reach through `ctx.http`, over this load's resource view. Made by the composition
   * root: upstream/ is a layer above compile/ (docs/adr/0029).
   */
  readonly upstreams: (resources: ResourceCache) => HttpUpstreams;
  /** State shared by the workers of the gateway (rate-limit cells, coalesced fetches). */
  readonly shared: { readonly cells: SharedCells; readonly fetches: SharedFetches; readonly events: SharedEvents; readonly processes: GatewayProcesses };
  /** The admin UI's validator compiles a pasted config (`ctx.checkOnly`, ADR 0131): no files, stores or probes. */
  readonly checkOnly?: boolean;
  /** The gateway's tracing (started after the first load, so read per call): `ctx.spans`. */
  readonly traces?: TracingHolder;
  /** `ctx.hideInLog`: a secret read from a file joins the process log's scrubber. */
  readonly hideInLog?: (secret: string) => void;
}

export interface NamedSpec {
  readonly value: Obj;
  readonly path: ConfigPath;
}

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

/** The longest a load holds the event loop between two routes (`LoadCompiler.breathe`). */
const BREATHE_MS = 20;

/**
 * The state of one config load: its issues, the instances to dispose if it fails, the named backends, the plugins'
 * config sections and admin routes; and the steps every part of the compile shares (running a plugin's compile,
 * policy sets, backends). Routes and binds are compiled by `compile-route.ts` and `compile-bind.ts` over it.
 */
export class LoadCompiler {
  /** `ctx.spans`: one object per load, reading the gateway's tracing when a span is asked for. */
  readonly spans: PluginSpans = pluginSpans(() => this.deps.traces?.tracing ?? null);

  readonly deps: CompileDeps;
  readonly issues: ConfigIssue[] = [];
  readonly disposables: { dispose?(): void }[] = [];
  readonly upstreams: HttpUpstreams;
  readonly resourceView;
  readonly named = new Map<string, NamedSpec>();
  /** Resolved `config:` sections of plugins (`configSections`), by name. */
  readonly sections = new Map<string, unknown>();
  staticConfig!: StaticConfig;
  /** `ctx.loadState`: plugin state for this load only. */
  readonly loadStates = new Map<string, unknown>();
  /** `ctx.adminRoute`: plugin endpoints on the admin address. */
  readonly adminRoutes = new Map<string, AdminRouteHandler>();
  /** The plugin (key) that registered each admin prefix (ADR 0154). */
  readonly adminRouteOwners = new Map<string, string>();
  /** Variables only a route's own policies set, refused in its expressions where none does (ADR 0179). */
  routeVariables: RouteVariables | undefined;
  /** `ctx.sharedFetches`: the files this load reads, noted (ADR 0184). */
  readonly namedFiles: NamedFiles;
  /** Every route compiled so far, for `ctx.afterLoad` checks (ADR 0196). */
  readonly loadedRoutes: LoadedRoute[] = [];
  /** `ctx.afterLoad`: the checks to run once every route is compiled, each bound to its plugin's place. */
  readonly afterLoadChecks: (() => void)[] = [];

  constructor(deps: CompileDeps) {
    this.deps = deps;
    this.namedFiles = new NamedFiles(deps.shared.fetches);
    this.resourceView = deps.resources.forGeneration(deps.generation);
    this.upstreams = deps.upstreams(this.resourceView);
  }

  /** Every installed plugin's `config:` sections, resolved for this load (their errors stop it, like the kernel's own). */
  resolveSections(raw: Obj | undefined): void {
    const env = this.deps.env ?? process.env;
    for (const { plugin, source } of this.deps.registry.plugins()) {
      if (plugin.kind === 'slot') continue;
      for (const section of plugin.configSections ?? []) {
        const where = configSectionPath(section);
        if (this.sections.has(where)) continue;
        const value = section.parent === undefined ? raw?.[section.name] : (raw?.[section.parent] as Obj | undefined)?.[section.name];
        try {
          this.sections.set(where, section.resolve(value, env));
        } catch (err) {
          // Positioned at the section, and a third-party plugin's named (a bare message stopped the start with no place).
          if (err instanceof ConfigError) throw err;
          const owner = source.name === 'switchyard' ? '' : `plugin \`${plugin.key}\` from ${describeSource(source)}: `;
          const message = `${owner}\`config.${where}\` failed to resolve: ${(err as Error)?.message ?? String(err)}`;
          throw new ConfigError({ code: ErrorCode.configInvalid, path: ['config', ...where.split('.')], message });
        }
      }
    }
  }

  /** A load warning at `path`: in the validator's answer for a paste (ADR 0131), else a log line (`logger`'s). */
  warn(path: ConfigPath, message: string, logger: Logger = this.deps.logger): void {
    if (this.deps.checkOnly) this.issues.push({ code: ErrorCode.configWarning, path, message });
    else logger.warn(message, { at: formatPath(path) });
  }

  issue(path: ConfigPath, message: string, atKey = false): void {
    this.issues.push({ code: ErrorCode.configInvalid, path, message, atKey });
  }

  /** When the event loop last ran other work during this load (`breathe`). */
  private ranOthersAt = performance.now();

  /**
   * Between two routes: let the event loop serve what waits (data-plane requests during a reload or a paste's
   * check) once this load has held it for BREATHE_MS. The plugins' compiles mostly await settled promises, which
   * yield to nothing: 24,000 routes with a CEL typo each held the loop 3.4 s (ADR 0179).
   */
  async breathe(): Promise<void> {
    if (performance.now() - this.ranOthersAt < BREATHE_MS) return;
    await new Promise<void>((resolve) => setImmediate(resolve));
    this.ranOthersAt = performance.now();
  }

  /**
   * `ctx.afterLoad`: keep `check` of the plugin `owner` at `path` for `runAfterLoad`. A throw other than a
   * ConfigError is an issue at `path` (naming a third-party plugin), as a compile's is; a check must be synchronous:
   * a promise it returns would settle after the load was accepted (its rejection is caught, not left unhandled).
   */
  addAfterLoad(path: ConfigPath, owner: PluginOwner | undefined, check: (load: LoadedConfig) => void): void {
    const loaded: LoadedConfig = { routes: this.loadedRoutes };
    const named = (message: string): string => (owner?.package === undefined ? message : `plugin \`${owner.plugin}\` from ${owner.package}: ${message}`);
    this.afterLoadChecks.push(() => {
      let result: unknown;
      try {
        result = check(loaded);
      } catch (err) {
        if (err instanceof ConfigError) throw err;
        const message = owner?.package === undefined ? ((err as Error)?.message ?? String(err)) : `afterLoad check failed: ${err instanceof Error ? `${err.name}: ${err.message}` : String(err)}`;
        throw new ConfigError({ code: ErrorCode.configInvalid, path, message: named(message) });
      }
      if (typeof (result as { then?: unknown } | undefined)?.then === 'function') {
        (result as Promise<unknown>).then(undefined, () => undefined);
        throw new ConfigError({ code: ErrorCode.configInvalid, path, message: named('an afterLoad check must finish synchronously; it returned a promise') });
      }
    });
  }

  /** Run the `ctx.afterLoad` checks once every route is compiled (ADR 0196); their failures join the load's issues. */
  runAfterLoad(): void {
    // One check cannot change what the next sees.
    Object.freeze(this.loadedRoutes);
    for (const check of this.afterLoadChecks) {
      try {
        check();
      } catch (err) {
        this.issues.push(...(err as ConfigError).issues);
      }
    }
  }

  /** Run a plugin's compile, turning its failures into positioned issues. */
  async guarded<T>(path: ConfigPath, run: () => T | Promise<T>): Promise<T | undefined> {
    try {
      return await run();
    } catch (err) {
      if (err instanceof ConfigError) this.issues.push(...err.issues);
      else this.issue(path, (err as Error)?.message ?? String(err));
      return undefined;
    }
  }

  /**
   * A plugin's compile. A third-party one is also bounded, its throws named and its result checked, failing with a
   * ConfigError at `path` (ADR 0144): a compile that never settles would hold the start or reload forever, one that returns no
   * instance would leave its key silently unapplied, and a backend without `handle` would fail every request.
   */
  private async checked<T>(registered: RegisteredPlugin, path: ConfigPath, run: () => T | Promise<T>): Promise<T> {
    const { plugin, source } = registered;
    if (source.name === 'switchyard') return run();
    const fail = (message: string): ConfigError => new ConfigError({ code: ErrorCode.configInvalid, path, message: `plugin \`${plugin.key}\` from ${describeSource(source)}: ${message}` });
    // A throw other than ctx.fail's (a bug of the plugin's) names it: a bare "x is undefined" at the key says nothing of whose.
    const compiled = Promise.resolve()
      .then(run)
      .catch((err: unknown) => {
        throw err instanceof ConfigError ? err : fail(`compile() failed: ${err instanceof Error ? `${err.name}: ${err.message}` : String(err)}`);
      });
    const instance = await settleWithin(compiled, PLUGIN_COMPILE_DEADLINE_MS, () => fail(`compile() did not finish within ${PLUGIN_COMPILE_DEADLINE_MS / 1000}s`));
    if (typeof instance !== 'object' || instance === null) throw fail(`compile() returned ${instance === null ? 'null' : instance === undefined ? 'undefined' : `a ${typeof instance}`}, not an instance`);
    if (plugin.kind === 'backend' && typeof (instance as { handle?: unknown }).handle !== 'function') throw fail('compile() returned a backend instance without `handle`');
    return instance;
  }

  /** The compile context the plugin `registered` gets at `path` (`plugin-context.ts`). */
  context(path: ConfigPath, policies: PolicySet, registered?: RegisteredPlugin, stateKey?: string, route?: string): BackendCompileContext {
    return pluginContext(this, path, policies, registered && pluginOwner(registered), stateKey, route);
  }

  /** `ctx.compileVariant`: the installed variant of `slot` whose key `value` holds, compiled at `at`. */
  async variant<T>(slotRef: SlotPlugin<T> | string, value: Obj, at: ConfigPath, policies: PolicySet): Promise<{ key: string; instance: T; package?: string }> {
    const slot = typeof slotRef === 'string' ? slotRef : slotRef.name;
    const key = Object.keys(value).find((k) => this.deps.registry.lookup(slot, k));
    if (!key) throw new ConfigError({ code: ErrorCode.configInvalid, path: at, message: `no installed \`${slot}\` key found` });
    const registered = this.deps.registry.lookup(slot, key)!;
    const plugin = registered.plugin as { key: string; compile(c: unknown, ctx: unknown): unknown };
    renameKey(value, key, plugin.key);
    const instance = (await this.checked(registered, [...at, key], () => plugin.compile(value[plugin.key], this.context([...at, key], policies, registered)))) as T;
    ownInstance(instance, registered);
    this.track(instance);
    // A third-party variant's failures name it (ADR 0154); the distribution's own are handed on as they are.
    const owner = pluginOwner(registered);
    return owner.package === undefined ? { key: plugin.key, instance } : { key: plugin.key, instance: taggedVariant(instance, owner, slot), package: owner.package };
  }

  track(instance: unknown): void {
    if (instance && typeof (instance as { dispose?: unknown }).dispose === 'function') this.disposables.push(instance as { dispose(): void });
  }

  async policySet(slot: string, value: Obj | undefined, path: ConfigPath, stateKey?: string, route?: string): Promise<CompiledPolicySet> {
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
      const instance = await this.guarded([...path, key], () => this.checked(registered, [...path, key], () => plugin.compile(config, this.context([...path, key], new CompiledPolicySet([]), registered, stateKey, route))));
      if (!instance) continue;
      ownInstance(instance, registered);
      this.track(instance);
      entries.push({ key: plugin.key, plugin, instance });
    }
    return new CompiledPolicySet(entries);
  }

  async backendValue(value: Obj, path: ConfigPath, policies: PolicySet): Promise<BackendInstance | undefined> {
    const key = Object.keys(value).find((k) => this.deps.registry.lookup('backend', k));
    if (!key) return undefined;
    const registered = this.deps.registry.lookup('backend', key)!;
    const plugin = registered.plugin as BackendPlugin;
    renameKey(value, key, plugin.key);
    const instance = await this.guarded([...path, key], () => this.checked(registered, [...path, key], () => plugin.compile(value[plugin.key], this.context([...path, key], policies, registered))));
    ownInstance(instance, registered);
    this.track(instance);
    return instance;
  }

  /**
   * `ctx.sharedCell`: the workers' cell for `key`. A check-only compile (the admin UI's validator) gets a cell of its
   * own: the shared ones are never freed, so every paste's buckets would fill them for good (ADR 0131).
   */
  sharedCell(key: string, initial: readonly number[]): SharedCell {
    return this.deps.checkOnly ? localCell(initial) : this.deps.shared.cells.cell(key, initial);
  }

  /**
   * A shared cell of `n` zeros for health state this worker has not held before. On a reload (generation > 1) that
   * is a backend new to the config, so the cell is zeroed: cells are never freed, and a backend config that comes
   * back must start afresh as it would in one process. A worker's first load (a start, a restart) takes the cell as
   * it is: a restarted worker joins the ejections the others made; so does a restarted worker's catch-up with a
   * reload the others applied while it started (`joins`): the backends new to it are live in the others.
   */
  sharedState(key: string, n: number): SharedCell {
    const zeros = new Array<number>(n).fill(0);
    const cell = this.sharedCell(key, zeros);
    if (this.deps.generation > 1 && !this.deps.joins) {
      cell.lock();
      cell.values.set(zeros);
      cell.unlock();
    }
    return cell;
  }

  /** The counter of backends taken out of rotation (outlier detection and failed health checks). */
  ejections(): EjectionCounter {
    return this.deps.metrics.counter('switchyard_backend_ejections_total', 'Backends taken out of rotation, by backend, route and reason (consecutive5xx, consecutiveGatewayFailure, healthCheck).');
  }
}
