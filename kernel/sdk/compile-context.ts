import type { PluginSpans } from './spans.ts';
import type { ConnectOptions, Connection } from './connect.ts';
import type { ExpressionCompiler } from './expr.ts';
import type { Logger } from './logger.ts';
import type { ConfigSection } from './config-section.ts';
import type { SharedCell, SharedEvents, SharedFetches } from './shared.ts';
import type { GatewayProcesses } from './processes.ts';
import type { HttpUpstreams } from './upstream.ts';
import type { SlotPlugin } from './plugin.ts';
import type { PolicySet } from './policy-instance.ts';
import type { BackendInstance } from './backend-instance.ts';

/** A path into the config tree: keys and array indexes. */
export type ConfigPath = readonly (string | number)[];

/** Long-lived resources kept across reloads while their key is unchanged (pools, processes, caches). */
export interface ResourceCache {
  /**
   * Return the resource under `key`, creating it with `create` if absent. A resource no snapshot uses any more
   * is disposed once the last request on the old snapshot has finished.
   */
  get<T>(key: string, create: () => T, dispose?: (value: T) => void | Promise<void>): T;
}

/** Capabilities handed to `compile`. Plugins never see the kernel's container. */
export interface CompileContext {
  /** Where this plugin's value sits in the config (for messages). */
  readonly path: ConfigPath;
  /**
   * For a route's policies: an opaque key naming the route by its port, listener and route names (and its rank among
   * routes of the same name), not by position, to key state a reload keeps, so a route inserted before it neither
   * takes nor resets it.
   */
  readonly stateKey?: string;
  /** For a route's policies: the route's name as requests see it (`ex.route.name`; `route<N>` when unnamed). */
  readonly route?: string;
  /** The directory the gateway runs from: relative paths in the config resolve against it (SPEC 5.1). */
  readonly cwd: string;
  readonly logger: Logger;
  readonly http: HttpUpstreams;
  readonly resources: ResourceCache;
  /**
   * Numbers shared by every worker of the gateway under `key` (the same cell for every compile and reload asking
   * for the same key), holding `initial` when first created: a rate limit stays one limit with N workers.
   */
  sharedCell(key: string, initial: readonly number[]): SharedCell;
  /** Remote fetches made once for the whole gateway, not once per worker (JWKS). */
  readonly sharedFetches: SharedFetches;
  /**
   * Tell the process log that `secret` (a credential the plugin read from a file the config names) is secret: no
   * log line shows it, as none shows a secret written in the config or taken from `${VAR}` (surrounding whitespace
   * ignored; `Bearer abc` hides `abc` too).
   */
  hideInLog(secret: string): void;
  /** Facts told to the other workers of the gateway (an MCP session ended by its client). */
  readonly sharedEvents: SharedEvents;
  /**
   * Child processes owned by the gateway: with workers the supervisor runs them, so a worker that dies cannot leave
   * them behind, and a budget counts for the whole gateway (`ProcessSpec.budget`).
   */
  readonly processes: GatewayProcesses;
  /** CEL: compile expressions at load, evaluate them per request. */
  readonly expr: ExpressionCompiler;
  /**
   * The resolved value of a `config:` section a plugin contributes (`defineConfigSection`), resolved once per
   * config load. Throws when no installed plugin contributes that section.
   */
  configSection<T>(section: ConfigSection<T>): T;
  /**
   * `config.defaultTimeouts` in ms (0 = none), for plugins that call upstreams on their own account (MCP targets):
   * the response-start deadline of a request with no `timeout` policy, and the longest silence inside a body.
   * Absent in contexts built outside a config load.
   */
  readonly defaultTimeouts?: { readonly backendRequestMs: number; readonly streamIdleMs: number };
  /**
   * True when the admin UI's validator compiles a pasted config it throws away (ADR 0131): read no file the config
   * names, open no store, fetch or connect to nothing, start nothing; check the rest, and end with `notChecked`
   * where the file, store or URL would be used. Absent in contexts built outside a config load.
   */
  readonly checkOnly?: boolean;
  /** Stop the load with a config error pointing at `path` + `sub`. */
  fail(message: string, sub?: ConfigPath): never;
  /** Log a warning about this value at load (it keeps loading). */
  warn(message: string, sub?: ConfigPath): void;
  /** Compile a backend object found inside this value (for example `requestMirror.backend`). */
  compileBackend(value: Record<string, unknown>, sub: ConfigPath): Promise<BackendInstance>;
  /**
   * Compile the variant chosen in a one-of slot (an MCP transport, an LLM provider, a guard). Given the slot object
   * (`defineSlot`), the instance is typed by the slot's contract; given its name, `T` says it. `package` is set for
   * a third-party variant (`name@version`), for the log lines of the owner that name it when it fails.
   */
  compileVariant<T = unknown>(slot: SlotPlugin<T> | string, value: Record<string, unknown>, sub: ConfigPath): Promise<{ key: string; instance: T; package?: string }>;
  /** Compile a policies object of the given map slot (per-target policies, say). */
  compilePolicies(slot: SlotPlugin | string, value: Record<string, unknown> | undefined, sub: ConfigPath): Promise<PolicySet>;
  /** Look up a top-level named backend, failing at `sub` when absent. */
  namedBackend(name: string, sub: ConfigPath): Promise<BackendInstance>;
  /**
   * Compile a connection of the plugin's own to an upstream service: `host` | `service` | `backend` read by the
   * one address parser, and the connection's own `policies` (only the keys in `allow`). Fails the load at the
   * field that is wrong. See `ConnectOptions` and docs/plugin-authoring.md "Streams and connections".
   */
  connect(options: ConnectOptions): Promise<Connection>;
  /**
   * A Prometheus counter on the admin `/metrics` endpoint, shared by every plugin asking for the same name (keep
   * it `switchyard_<area>_<what>_total`). Label values should be bounded (provider, model, route), never request data.
   */
  counter(name: string, help: string): MetricCounter;
  /**
   * A Prometheus histogram on `/metrics`, shared by every plugin asking for the same name (the first caller's
   * `labelNames` and `buckets` win). Name it in base units with the unit last (`switchyard_<area>_<what>_seconds`).
   * Label values should be bounded (route, target, model from config or an upstream list): past 1000 distinct label
   * sets the rest are counted under one series whose labels are all `other`.
   *
   * @param name Metric name, `[a-zA-Z_:][a-zA-Z0-9_:]*`.
   * @param help One-line help text.
   * @param labelNames The label names every observation gives, in order.
   * @param buckets Upper bounds of the buckets (ascending; `+Inf` is implied).
   */
  histogram(name: string, help: string, labelNames: readonly string[], buckets: readonly number[]): MetricHistogram;
  /**
   * State shared by every plugin during one config load, dropped when it ends: `create` runs for the first caller of
   * `key`. For checks across the whole config (a name that must be unique among all `ai` backends).
   */
  loadState<T>(key: string, create: () => T): T;
  /**
   * Run `check` once the whole config is compiled (every route of every bind), before the load is accepted: for a
   * value naming something another part of the config defines (a route a declared key lists), which no single
   * compile can see. `ctx.fail` (or a thrown `ConfigError`) in it fails the load at the path it names, reported with
   * the load's other errors; any other throw fails it at this value, naming a third-party plugin. Checks run in the
   * order they were added, synchronously (one returning a promise is a config error). Absent in contexts built
   * outside a config load.
   */
  afterLoad?(check: (load: LoadedConfig) => void): void;
  /**
   * Spans of the plugin's own operations in the request's trace (`config.tracing`; docs/observability.md "Traces").
   * `spans.start` returns undefined when the gateway does not trace. Absent in contexts built outside a config load.
   */
  readonly spans?: PluginSpans;
  /**
   * Serve JSON endpoints under `prefix` (`/keys`: `/keys` and `/keys/...`) on the admin address, next to
   * `/config_dump`: loopback by default and Host/Origin-checked like it (ADR 0017). The live config's registration
   * answers; the first plugin to claim a prefix in a load keeps it. Requests with a body must send
   * `content-type: application/json` (a page's plain form cannot). Absent in contexts built outside a config load.
   */
  adminRoute?(prefix: string, handler: AdminRouteHandler): void;
}

/** The compiled config as `CompileContext.afterLoad` checks see it. */
export interface LoadedConfig {
  /** Every route of every bind and listener, in config order. */
  readonly routes: readonly LoadedRoute[];
}

/** One compiled route (`LoadedConfig.routes`). */
export interface LoadedRoute {
  /** Its name as requests see it (`ex.route.name`; `route<N>` when unnamed): one name may be on several listeners. */
  readonly name: string;
  /** Where it sits in the config. */
  readonly path: ConfigPath;
  /** The keys of its route policies, aliases resolved (`virtualKeys`). */
  readonly policies: readonly string[];
}

/** A request to a plugin's endpoint on the admin address (`CompileContext.adminRoute`). */
export interface AdminRequest {
  /** `GET`, `POST`, `PUT`, `PATCH` or `DELETE` (HEAD is answered as GET). */
  readonly method: string;
  /** The path below the prefix: `''` or `/...`, percent-decoded segment by segment. */
  readonly subpath: string;
  readonly query: URLSearchParams;
  /** The parsed JSON body; undefined when the request had none. */
  readonly body: unknown;
}

/** A plugin endpoint's answer, written as JSON. */
export interface AdminResponse {
  readonly status: number;
  readonly body: unknown;
}

/** Handler of a plugin's admin endpoint. A thrown error is a 500 (its message logged, not shown). */
export type AdminRouteHandler = (req: AdminRequest) => AdminResponse | Promise<AdminResponse>;

/** A histogram plugins observe into; series are told apart by their labels. */
export interface MetricHistogram {
  /** Record one value for the series of these labels (a missing label is the empty string). */
  observe(labels: Record<string, string>, value: number): void;
  /** The series of these label values, in `labelNames` order: resolve it once (at compile time) and observe without lookups. */
  child(...values: string[]): { observe(value: number): void };
}

/** A counter plugins bump; series are told apart by their labels. */
export interface MetricCounter {
  inc(labels?: Record<string, string>, by?: number): void;
  /** The series of these labels: resolve it once (per model, per route) and bump it without building its key again. */
  child(labels: Record<string, string>): { inc(by?: number): void };
  /**
   * Run `fn` just before `/metrics` renders this counter, until the returned function is called: a plugin that sums
   * increments of many series in place (one per virtual key) bumps them then instead of on every request. Remove it
   * when what it reads goes (a resource's close), not per config load.
   */
  beforeScrape(fn: () => void): () => void;
}

/** Compile context of a backend: also sees the policies that apply to it (route < named < backend ref). */
export interface BackendCompileContext extends CompileContext {
  readonly policies: PolicySet;
}
