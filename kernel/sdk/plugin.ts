import type { PluginSpans } from './spans.ts';
import type { ConnectOptions, Connection } from './connect.ts';
import type { Duplex } from 'node:stream';
import type { Exchange } from './exchange.ts';
import type { ExpressionCompiler } from './expr.ts';
import type { Logger } from './logger.ts';
import type { PhaseName } from './phases.ts';
import type { Reply } from './reply.ts';
import type { ConfigSection } from './config-section.ts';
import type { Facet, FacetValue } from './facets.ts';
import type { SharedCell, SharedFetches } from './shared.ts';
import type { GatewayProcesses } from './processes.ts';
import type { HttpUpstreams, UpstreamAttempt, UpstreamTarget, UpstreamTls } from './upstream.ts';

/** Version of the plugin contract. A plugin built for another major version is refused at load. */
export const SDK_API_VERSION = 1;

/** The brand every plugin object carries; a global symbol, so copies of the SDK in other packages agree. */
export const PLUGIN_BRAND: unique symbol = Symbol.for('switchyard.plugin') as never;

/** A JSON Schema (draft 2020-12) object. Every property should carry a `description`. */
export type JsonSchema = Record<string, unknown>;

/**
 * The kinds of plugin, only what the kernel must tell apart: a `policy` fills map slots (policies objects), a
 * `backend` the kernel's `backend` slot, a `variant` the one-of slot some plugin declared (an MCP transport, an LLM
 * provider, a guard type), and a `slot` declares a place in the config tree that other plugins fill.
 */
export type PluginKind = 'policy' | 'backend' | 'variant' | 'slot';

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
  /** Stop the load with a config error pointing at `path` + `sub`. */
  fail(message: string, sub?: ConfigPath): never;
  /** Log a warning about this value at load (it keeps loading). */
  warn(message: string, sub?: ConfigPath): void;
  /** Compile a backend object found inside this value (for example `requestMirror.backend`). */
  compileBackend(value: Record<string, unknown>, sub: ConfigPath): Promise<BackendInstance>;
  /**
   * Compile the variant chosen in a one-of slot (an MCP transport, an LLM provider, a guard). Given the slot object
   * (`defineSlot`), the instance is typed by the slot's contract; given its name, `T` says it.
   */
  compileVariant<T = unknown>(slot: SlotPlugin<T> | string, value: Record<string, unknown>, sub: ConfigPath): Promise<{ key: string; instance: T }>;
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
   * Spans of the plugin's own operations in the request's trace (`config.tracing`; docs/observability.md "Traces").
   * `spans.start` returns undefined when the gateway does not trace. Absent in contexts built outside a config load.
   */
  readonly spans?: PluginSpans;
  /**
   * Serve JSON endpoints under `prefix` (`/keys`: `/keys` and `/keys/…`) on the admin address, next to
   * `/config_dump`: loopback by default and Host/Origin-checked like it (ADR 0017). The live config's registration
   * answers; the first plugin to claim a prefix in a load keeps it. Requests with a body must send
   * `content-type: application/json` (a page's plain form cannot). Absent in contexts built outside a config load.
   */
  adminRoute?(prefix: string, handler: AdminRouteHandler): void;
}

/** A request to a plugin's endpoint on the admin address (`CompileContext.adminRoute`). */
export interface AdminRequest {
  /** `GET`, `POST`, `PUT`, `PATCH` or `DELETE` (HEAD is answered as GET). */
  readonly method: string;
  /** The path below the prefix: `''` or `/…`, percent-decoded segment by segment. */
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
}

/** Values a policy offers to the backend it applies to, read at compile time (TLS settings, timeouts, retries). */
export interface PolicyFacets {
  tls?: UpstreamTls;
  /** Whole-request deadline in ms (504). */
  requestTimeoutMs?: number;
  /** Per-attempt deadline in ms (504, retryable). */
  attemptTimeoutMs?: number;
  /** Longest silence inside a response body in ms (0 = none); replaces `config.defaultTimeouts.streamIdleTimeout`. */
  streamIdleTimeoutMs?: number;
  retry?: { attempts: number; codes: readonly number[]; backoffMs?: number };
  /** Passive health thresholds of the backend (`outlierDetection`); the kernel keeps the state and picks around it. */
  outlierDetection?: OutlierDetectionFacet;
  /** Active probes of the backend (`healthCheck`); the kernel runs them. */
  healthCheck?: HealthCheckFacet;
}

/** Active health check settings; see docs/backends-health.md. */
export interface HealthCheckFacet {
  /** Path (and query) probed with GET on the backend's own origin. */
  path: string;
  intervalMs: number;
  timeoutMs: number;
  /** Failed probes in a row (no answer, status outside 2xx) that take the backend out of rotation. */
  unhealthyThreshold: number;
  /** Passed probes in a row that bring it back. */
  healthyThreshold: number;
}

/** Thresholds of passive health checking (Envoy outlier detection names); see docs/backends-health.md. */
export interface OutlierDetectionFacet {
  /** Failures in a row (any 5xx, refused/reset connection, timeout) that eject the backend. */
  consecutive5xx: number;
  /** Gateway failures in a row (refused/reset connection, timeout, 502/503/504) that eject the backend. */
  consecutiveGatewayFailure: number;
  /** First ejection's length; the nth is n times as long, capped by `maxEjectionMs`. */
  baseEjectionMs: number;
  maxEjectionMs: number;
  /** Eject only while the ejected share of the route's backends is below this (so one can always be ejected). */
  maxEjectionPercent: number;
}

/** What a compiled policy does per request. Every hook is optional; sync hooks are not awaited. */
export interface PolicyInstance {
  /** In the policy's phase. Return a Reply to answer locally and stop the chain. */
  onRequest?(ex: Exchange): void | Reply | undefined | Promise<void | Reply | undefined>;
  /** Per upstream attempt, after the request was built (sign, add credentials). */
  onUpstream?(ex: Exchange, attempt: UpstreamAttempt): void | Promise<void>;
  /**
   * On every response, upstream or local, in reverse phase order. Change status, headers or body in place. Return a
   * promise only when the hook must wait (read an upstream body to rewrite it): the reply is held until it settles.
   */
  onResponse?(ex: Exchange, reply: Reply): void | Promise<void>;
  /** After the response is finished. */
  onLog?(ex: Exchange, status: number): void;
  readonly facets?: PolicyFacets;
  /**
   * Compiled values this policy hands to the backend it applies to (and to whatever else compiles against its
   * policy set), read at compile time with `ctx.policies.facet(f)` instead of a per-request attribute. Build the
   * entries with `facet.of(value)`; see `defineFacet`.
   */
  readonly provides?: readonly FacetValue[];
  /**
   * Request headers that carry a client credential this policy reads (lower-case: `authorization`, `x-api-key`).
   * Right after the request hook of the last policy of the set that declares any, the kernel removes all of them
   * from `ex.headers`, whether the credential was accepted, ignored (optional or permissive mode) or of another
   * scheme, so no upstream receives a credential sent for the gateway. Their values as received stay readable
   * through the `withheldCredentials` attribute for a policy that forwards one on purpose (`backendAuth.passthrough`).
   * Collected once per policy set at load; a route without such policies pays nothing.
   */
  readonly credentialHeaders?: readonly string[];
  /**
   * Choose, per request, which of the route's backends serve it and in what order (the `ai` policy's virtual
   * models). Called once at load for a policy of a route's own `policies`, after the route's backends compiled, with
   * those backends; return undefined when this route needs no choosing (it then pays nothing per request). A config
   * error found here (a name that is not one of `backends`) is reported with the compile context's `fail`. One
   * policy per route may choose.
   */
  selectBackends?(backends: readonly RouteBackend[]): BackendSelector | undefined;
  /**
   * Set when this policy only works in front of backends of one `protocol` (`llm`: a token rate limit counts the
   * tokens an LLM backend reports). At load, a route or backend reference whose backend speaks another protocol, or
   * a route without backends, is a config error: `message` at `path` (a full config path: `ctx.path` plus a sub-path).
   */
  readonly requiresBackendProtocol?: { readonly protocol: string; readonly message: string; readonly path: ConfigPath };
  /** Release timers or handles when the snapshot holding this instance is retired. */
  dispose?(): void;
}

/** A backend of a route as `PolicyInstance.selectBackends` sees it at load. */
export interface RouteBackend {
  /** How the route names it: a named backend's name, else the backend's `label` (an `ai` backend's `name`), else `backends[<i>]`. */
  readonly name: string;
  /** The compiled backend (its `protocol`; an identity to key per-backend values by). */
  readonly instance: BackendInstance;
}

/**
 * What a backend selector decides for one request: the backends to try, as places in the list given to
 * `selectBackends`, first choice first; a reply that answers instead (the route's response hooks apply); or
 * undefined for the route's usual pick by weight.
 */
export type BackendChoice = readonly number[] | Reply | undefined;

/**
 * Runs after the route's request hooks, before a backend is picked; may read the body (`ex.bufferBody`). The kernel
 * sends the request to the first chosen backend in rotation (healthy, not cooling down after a failure) and, when
 * it fails over (ADR 0023, 0039), to the next chosen one not tried yet; never to a backend left out.
 */
export type BackendSelector = (ex: Exchange) => BackendChoice | Promise<BackendChoice>;

/** What a policy set's request hooks made of an exchange: a view of it, or a local answer that stops the request. */
export interface DerivedRequest {
  /** The exchange as the hooks left it: its own headers and attributes over the original's. */
  readonly exchange: Exchange;
  /** Set when a hook answered (denied) instead of letting the request go on. */
  readonly reply?: Reply;
}

/** The per-attempt hooks (`backendAuth`) of a policy set, bound to the exchange they act for. */
export type AttemptHook = (attempt: UpstreamAttempt) => void | Promise<void>;

/** A compiled `policies` object. */
export interface PolicySet {
  readonly keys: readonly string[];
  /** Facets merged over all policies of the set (later phases win on conflicts). */
  readonly facets: PolicyFacets;
  has(key: string): boolean;
  /**
   * The value a policy of the set provides for a typed facet (`defineFacet`), or undefined. When several do, the
   * most specific wins (a backend's policy over a route's; within one set the later phase).
   */
  facet<T>(facet: Facet<T>): T | undefined;
  /** This set with `over` merged on top: per policy key, `over`'s instance replaces this one's (facets field by field). */
  layer(over: PolicySet): PolicySet;
  /** True when a policy of the set has request hooks (`onRequest`). */
  readonly hasRequestHooks: boolean;
  /**
   * Run the set's request hooks for a sub-request a backend makes itself (one MCP target's share of a client
   * request): the hooks see a view of `ex` whose headers and attributes are copies, so a header modifier or an
   * authorizer acts for this sub-request only. The kernel already ran the route's and backend's hooks on `ex`.
   */
  runRequestHooks(ex: Exchange): Promise<DerivedRequest>;
  /**
   * The set's per-attempt hooks (`backendAuth` signing, key injection) for requests a plugin sends itself with
   * `UpstreamTarget.request` (pass the result as `onAttempt`). They act for a detached copy of `ex`, so the hook may
   * outlive the request (a connection kept by an MCP session). Undefined when no policy of the set has one.
   */
  attemptHook(ex: Exchange): AttemptHook | undefined;
}

/** Compile context of a backend: also sees the policies that apply to it (route < named < backend ref). */
export interface BackendCompileContext extends CompileContext {
  readonly policies: PolicySet;
}

/** What a compiled backend does per request. */
export interface BackendInstance {
  /** Serve the exchange: forward it, or answer it. Throw a GatewayError for a failure reply. */
  handle(ex: Exchange): Reply | Promise<Reply>;
  /** Handle an HTTP/1.1 upgrade (WebSocket). Without it upgrades get 501. */
  upgrade?(ex: Exchange, socket: Duplex, head: Buffer): void;
  /** Protocol label for logs and metrics (`http`, `mcp`, `llm`, `a2a`). */
  readonly protocol?: string;
  /**
   * How health metrics and logs name this backend when a route refers to it inline (a named backend goes by its
   * name): the `host` address, the `ai` backend's `name`. Default: its place, `backends[<i>]`.
   */
  readonly label?: string;
  /** The upstream of a backend that forwards HTTP to one origin (`host`); lets policies such as mirroring reach it. */
  readonly target?: UpstreamTarget;
  /**
   * Set when `handle(ex)` is exactly `target.forward(ex)` and nothing more (`host`). Where no policy hook needs the
   * reply as an object (no response hooks, no per-attempt hooks, retry or `timeout`), the kernel then forwards
   * itself and writes the upstream's answer straight into the client's response, without a `Reply` and its stream
   * (docs/adr/0051): the same answer, at less CPU per request.
   */
  readonly forwardsToTarget?: boolean;
  /**
   * Failover this backend wants by default (ADR 0039): on a route that lists it with other backends and has no
   * `retry` policy, an answer with one of `codes` or a refused/reset connection or timeout sends the request to
   * another backend of the route, each at most once; the one that failed cools down (a 429's or 503's
   * `Retry-After`, capped, else a short pause). The `ai` backend sets it: the request body is already buffered.
   */
  readonly failover?: { readonly codes: readonly number[] };
  /**
   * This backend's deadline for the upstream's response headers, per attempt, in ms (0 = none), when no `timeout`
   * policy applies: replaces `config.defaultTimeouts.backendRequestTimeout` (ADR 0019). The `ai` backend gives its
   * own `config.defaultTimeouts.llmBackendRequestTimeout` (a section it contributes): completions take long.
   */
  readonly responseDeadlineMs?: number;
  /**
   * Re-shape a gateway-made error reply (one with `reply.error`) into the error format this backend's clients
   * expect (an LLM API's error JSON). The kernel calls it, before the response hooks, for every such reply on a
   * route this backend serves: rejections of the route's and backend's policies (401, 403, 429), the kernel's own
   * errors (timeouts, body too large) and the backend's. Replace `reply.body` and `content-type`; keep the status and
   * the other headers (`WWW-Authenticate`, `Retry-After`). With several backends on a route, the first that has
   * `shapeError` shapes the errors made before one is picked. Must not throw.
   */
  shapeError?(ex: Exchange, reply: Reply): void;
  dispose?(): void;
}

interface ManifestBase<C> {
  /** The exact config key (SPEC.md). */
  readonly key: string;
  /** Other accepted spellings, such as the neutral vendor words of NAMES.md. */
  readonly aliases?: readonly string[];
  /** One line for `switchyard plugins` and the schema. */
  readonly description: string;
  /** JSON Schema of the value at `key`. May `$ref` `switchyard:defs#/$defs/...` and `switchyard:slot/<name>`. */
  readonly schema: JsonSchema;
  /**
   * Slots this plugin owns and declares (`defineSlot`): the `ai` backend declares `llmProvider`, the `mcp` backend
   * its `mcpTransport` and `mcpTargetPolicies`. The same slot object may be listed by several plugins (the
   * `backendAuth` policy and the `ai` backend both use `backendAuth`); it is registered once.
   */
  readonly slots?: readonly SlotPlugin<any>[];
  /**
   * CEL variables this plugin publishes as request attributes (`jwt`, `apiKey`, the `ai` backend's `llm`), declared
   * to every expression. A name alone gets a generic description in docs; give `{ name, description }` to say what
   * the variable holds.
   */
  readonly celVariables?: readonly CelVariable[];
  /** Sections of the top-level `config:` block this plugin owns (`defineConfigSection`); read with `ctx.configSection`. */
  readonly configSections?: readonly ConfigSection<any>[];
  /** Phantom: the config type after validation. */
  readonly __config?: C;
}

/** A CEL variable a plugin publishes: its name, or its name and what it holds (docs/cel.md). */
export type CelVariable = string | { readonly name: string; readonly description: string };

/** Manifest of a policy plugin. */
export interface PolicyManifest<C = unknown> extends ManifestBase<C> {
  /** Map slots the policy may appear in: `routePolicies`, `backendPolicies`, `mcpTargetPolicies`, … */
  readonly attach: readonly string[];
  readonly phase: PhaseName;
  /** Place inside the phase; lower runs first on requests (and last on responses). */
  readonly order?: number;
  /**
   * `buffer` or `replay`: the kernel reads the whole request body (2 MiB cap, 413 beyond) before the first
   * request hook of the policies object this policy sits in, so hooks and every upstream attempt (retries
   * included) see `ex.body`.
   */
  readonly needs?: { readonly body?: 'none' | 'buffer' | 'replay' };
  compile(config: C, ctx: CompileContext): PolicyInstance | Promise<PolicyInstance>;
}

/** Manifest of a backend kind (`host`, `backend`, `mcp`, `ai`, …). */
export interface BackendManifest<C = unknown> extends ManifestBase<C> {
  /** Whether a top-level named backend may be of this kind. */
  readonly named?: boolean;
  compile(config: C, ctx: BackendCompileContext): BackendInstance | Promise<BackendInstance>;
}

/** Manifest of a variant: a plugin that fills a one-of slot (an MCP transport, an LLM provider, a guard type). */
export interface VariantManifest<C = unknown, I = unknown> extends ManifestBase<C> {
  /** Compile the value at `key` into the instance the slot's owner uses; its type is the slot's contract. */
  compile(config: C, ctx: CompileContext): I | Promise<I>;
}

/**
 * A slot: a place in the config tree where plugins plug in. The kernel declares `routePolicies`,
 * `backendPolicies` and `backend`; every other slot is declared by the plugin that owns it (`defineSlot`).
 * `I` is the contract of a one-of slot's instances (what its variants' `compile` returns).
 */
export interface SlotManifest<I = unknown> {
  /** Slot name, referenced from schemas as `switchyard:slot/<name>` or with `"x-slot": "<name>"`. */
  readonly name: string;
  /** `map`: any number of plugin keys (a policies object); `oneOf`: exactly one key (a transport). */
  readonly type: 'map' | 'oneOf';
  /** Which plugins fill it: `policy` (a map slot: policies whose `attach` names it), `variant` (a one-of slot), `backend`. */
  readonly accepts: 'policy' | 'backend' | 'variant';
  readonly description: string;
  /** How config errors name one entry: `guard type` gives "unknown guard type `x`". Default: "`<name>` entry". */
  readonly noun?: string;
  /** Phantom: the instance contract of the slot's variants. */
  readonly __instance?: I;
}

/** Fields every registered plugin object carries. */
export interface PluginBrand {
  readonly [PLUGIN_BRAND]: true;
  readonly apiVersion: number;
  readonly kind: PluginKind;
}

export type PolicyPlugin<C = unknown> = PolicyManifest<C> & PluginBrand & { readonly kind: 'policy' };
export type BackendPlugin<C = unknown> = BackendManifest<C> & PluginBrand & { readonly kind: 'backend' };
export type VariantPlugin<C = unknown, I = unknown> = VariantManifest<C, I> &
  PluginBrand & {
    readonly kind: 'variant';
    /** The name of the one-of slot this variant fills. */
    readonly slot: string;
  };
export type SlotPlugin<I = unknown> = SlotManifest<I> & PluginBrand & { readonly kind: 'slot'; readonly key: string };

/** Any plugin object. */
export type Plugin = PolicyPlugin<any> | BackendPlugin<any> | VariantPlugin<any, any> | SlotPlugin<any>;

/** What a plugin is called in listings and messages: its kind, or for a variant the slot it fills (`guard`). */
export function pluginLabel(plugin: Plugin): string {
  return plugin.kind === 'variant' ? plugin.slot : plugin.kind;
}

function brand<K extends PluginKind, T extends object>(kind: K, manifest: T): T & PluginBrand & { kind: K } {
  return Object.freeze({ ...manifest, kind, apiVersion: SDK_API_VERSION, [PLUGIN_BRAND]: true as const });
}

/** Define a policy plugin. */
export function definePolicy<C>(manifest: PolicyManifest<C>): PolicyPlugin<C> {
  return brand('policy', manifest);
}

/** Define a backend kind. */
export function defineBackend<C>(manifest: BackendManifest<C>): BackendPlugin<C> {
  return brand('backend', manifest);
}

/**
 * Define a variant of a one-of slot: `defineVariant(guardSlot, { key: 'denylist', … })`. `compile` must return the
 * slot's instance contract (`GuardInstance` for `guardSlot` of `switchyard/slots/ai`), checked by the compiler.
 * The slot modules also export one-argument helpers (`defineGuard`, `defineLlmProvider`, `defineMcpTransport`,
 * `defineBackendAuth`) that read better when the config type is written out.
 */
export function defineVariant<C, I>(slot: SlotPlugin<I>, manifest: VariantManifest<C, NoInfer<I>>): VariantPlugin<C, I> {
  if (slot.type !== 'oneOf') throw new Error(`defineVariant: slot \`${slot.name}\` is a ${slot.type} slot; variants fill one-of slots`);
  const slots = manifest.slots?.includes(slot) ? manifest.slots : [slot, ...(manifest.slots ?? [])];
  return brand('variant', { ...manifest, slots, slot: slot.name });
}

/** Define a slot that other plugins fill. List it in the owning plugin's `slots` (and export it for third parties). */
export function defineSlot<I = unknown>(manifest: SlotManifest<I>): SlotPlugin<I> {
  return brand('slot', { ...manifest, key: manifest.name });
}

/** True when `value` is a plugin object made by a `define*` helper of any SDK copy. */
export function isPlugin(value: unknown): value is Plugin {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[PLUGIN_BRAND] === true;
}
