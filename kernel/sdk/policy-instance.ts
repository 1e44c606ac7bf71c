import type { Exchange } from './exchange.ts';
import type { Reply } from './reply.ts';
import type { ResponseHeaderList } from './header-list.ts';
import type { Facet, FacetValue } from './facets.ts';
import type { UpstreamAttempt, UpstreamTls } from './upstream.ts';
import type { ConfigPath } from './compile-context.ts';
import type { BackendInstance } from './backend-instance.ts';

/** Values a policy offers to the backend it applies to, read at compile time (TLS settings, timeouts, retries). */
export interface PolicyFacets {
  tls?: UpstreamTls;
  /** Speak HTTP/2 to the upstream (`http.version`): h2c in cleartext, ALPN h2 over TLS; false: HTTP/1.1. */
  http2?: boolean;
  /** Whole-request deadline in ms (504). */
  requestTimeoutMs?: number;
  /** Per-attempt deadline in ms (504, retryable). */
  attemptTimeoutMs?: number;
  /**
   * Default deadline for the response headers of the backends the policy applies to, per attempt, in ms (0 = none),
   * where no `timeout` policy sets one: replaces `config.defaultTimeouts.backendRequestTimeout` (a backend's own
   * `responseDeadlineMs` wins). The `a2a` policy gives `a2aBackendRequestTimeout` (ADR 0019).
   */
  responseDeadlineMs?: number;
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
  /**
   * The change `onResponse` makes, made to the headers of an upstream answer the kernel forwards straight into the
   * client's response (ADR 0051, 0071): `headers` is the answer's flat list (names lower-case, hop-by-hop ones still
   * in it; the kernel drops them and adds queued headers afterwards), `status` its status. Synchronous; it sees no
   * body. Provide it when `onResponse` only reads the exchange and the reply's status and headers and changes
   * headers: when every response hook of a route's backend has one, the route keeps the direct forward (no Reply, no
   * header object per request). `onResponse` still runs on local replies and errors, so both must do the same; the
   * `headerList*` helpers edit the list as the same operation edits a `HeaderMap`.
   */
  onResponseHeaders?(ex: Exchange, status: number, headers: ResponseHeaderList): void;
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
