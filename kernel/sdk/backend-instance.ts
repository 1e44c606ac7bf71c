import type { Duplex } from 'node:stream';
import type { Exchange } from './exchange.ts';
import type { Reply } from './reply.ts';
import type { UpstreamTarget } from './upstream.ts';

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
