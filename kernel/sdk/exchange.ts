import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import type { AttributeKey } from './attributes.ts';
import type { GatewayError } from './errors.ts';

/** What the kernel knows about the route that took a request. */
export interface RouteInfo {
  /** The route's `name`, or `route<index>` when unnamed. */
  readonly name: string;
  /** `<listener>/<route>`: unique inside a snapshot; used in metrics and logs. */
  readonly key: string;
  readonly listener: string;
  readonly bind: number;
  /** The route's `namespace` (a control plane's; undefined when not set). */
  readonly namespace?: string | undefined;
  /** The route's `ruleName` (a control plane's rule identifier; on the access log and spans as `route_rule`). */
  readonly ruleName?: string | undefined;
}

/**
 * The per-request object every hook receives. One is made per request and dropped after the log phase.
 * Fields that policies change (path, query, authority, headers) are read by the backend when it forwards.
 */
export interface Exchange {
  /** The client's request (read its body through `bufferBody`, or let the backend stream it). */
  readonly req: IncomingMessage;
  readonly method: string;
  /** Path without the query string: the client's, normalised before routing (ADR 0013), as rewrites left it. */
  path: string;
  /** The query string including its leading `?`, or the empty string. */
  query: string;
  /** The authority forwarded upstream (Host). Starts as the client's Host header. */
  authority: string;
  /** The client's Host without port, lower-cased, one trailing dot removed (used for hostname matching, ADR 0014). */
  readonly hostname: string;
  readonly scheme: 'http' | 'https';
  /** Request headers (lower-case names). Policies mutate this object; it is what goes upstream. */
  readonly headers: IncomingHttpHeaders;
  /**
   * The client's address: the TCP peer, or, when the peer is one of `config.trustedProxies`, the right-most
   * `X-Forwarded-For` address that is not a trusted proxy. CEL's `source.address`.
   */
  readonly sourceAddress: string;
  /**
   * `scheme://host[:port]` the client used to reach the gateway, for URLs the gateway advertises about itself: the
   * listener's scheme and the client's Host, or what a peer in `config.trustedProxies` forwarded
   * (`X-Forwarded-Proto`/`-Host`, else `Forwarded`). Forwarding headers of any other peer are ignored (ADR 0014).
   */
  readonly externalOrigin: string;
  /**
   * The request id: the client's `x-request-id` when it is a plain token of at most 128 characters, else one the
   * gateway made. Logged as `request.id` and sent upstream as `x-request-id` (ADR 0025).
   */
  readonly requestId: string;
  /** The TCP peer's port. */
  readonly sourcePort: number;
  readonly route: RouteInfo;
  /** The path prefix of the match object that selected the route, when it was a `pathPrefix` match. */
  readonly matchedPrefix: string | undefined;
  /** The original path and query before any rewrite. */
  readonly originalUrl: string;
  /** `performance.now()` at arrival. */
  readonly startTime: number;
  /** Aborted when the client goes away before the response is complete. */
  readonly signal: AbortSignal;
  /**
   * Protocol label for logs and metrics (`http`, `mcp`, `a2a`, `llm`). The backend's label applies unless a policy
   * set another one first (the `a2a` policy classifies A2A traffic to a plain `host`).
   */
  protocol: string;
  /** The buffered request body, once a policy or backend has called `bufferBody`. */
  readonly body: Buffer | undefined;

  /** Read and keep the whole request body, failing with 413 beyond `limit` bytes (default 2 MiB). */
  bufferBody(limit?: number): Promise<Buffer>;
  /**
   * Look at the request body when it is at most `limit` bytes (default 2 MiB), without refusing a longer one: resolves
   * with the whole body (kept as `ex.body`, as `bufferBody` keeps it; one already in memory is given whatever its
   * size), or with `undefined` when the body is longer. A longer body is left to the backend, which streams it upstream
   * whole and with its own framing: a declared `Content-Length` past `limit` is not read at all; a chunked body's bytes
   * read so far are sent first, then the rest as the client sends it (back-pressure, deadlines and the client leaving
   * work as for any streamed body). Rejects with 400 when the client fails or leaves while it is read. For policies
   * that only inspect the start of a request (the `a2a` policy's method) and must not fail one too large to inspect.
   */
  peekBody(limit?: number): Promise<Buffer | undefined>;
  /**
   * A copy of the request body as the backend forwards it, for work that must never hold the request back (a mirror):
   * resolves with the whole body once it has arrived, when it is at most `limit` bytes, else with `undefined` (longer,
   * a declared `Content-Length` past `limit` at once; the client failed or left; `take` refused a chunk). Nothing is
   * read ahead of the backend: a streamed body is copied as it arrives, at the pace the upstream reads it. `take`, when
   * given, is asked before each chunk (or a body already in memory) is kept, with its size: a caller bounding what
   * its copies hold answers `false` to give this one up. Never rejects.
   */
  copyBody(limit: number, take?: (bytes: number) => boolean): Promise<Buffer | undefined>;
  /**
   * `bufferBody` without a promise: the body is read and kept as `bufferBody` does, then handed to `receiver.bodyRead`
   * (at once when it is already read), or the 413/400 error `bufferBody` would reject with to `receiver.bodyFailed`.
   * For a backend's hot path: a request whose body the kernel reads this way reaches the upstream without a promise
   * turn in between (docs/adr/0070). An exchange a plugin makes itself may implement it over `bufferBody`.
   */
  readBodyInto(limit: number, receiver: BodyReceiver): void;
  /** Replace the request body sent upstream (a JSON-rewriting policy, say). Fixes content-length. */
  setBody(body: Buffer): void;

  get<T>(key: AttributeKey<T>): T | undefined;
  set<T>(key: AttributeKey<T>, value: T): void;

  /**
   * Queue a header for the response, whatever produces it (upstream, a local reply, an error).
   * Queued headers are inserted last and overwrite same-named headers (CORS, rate-limit headers). `Content-Length`
   * is ignored: the gateway frames each answer itself.
   */
  queueResponseHeader(name: string, value: string): void;

  /** Add a field to this request's access-log line. */
  logField(name: string, value: string | number | boolean): void;

  /**
   * A copy that outlives the request, for work done on its behalf later (an MCP session's target connections): its
   * own headers and attributes as they are now, the buffered body if any; no `req`, never aborted.
   */
  detach(): Exchange;
}

/** Told when a request body has been read whole (`Exchange.readBodyInto`), or why not. */
export interface BodyReceiver {
  bodyRead(body: Buffer): void;
  bodyFailed(err: GatewayError): void;
}
