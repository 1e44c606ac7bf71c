import type { IncomingHttpHeaders } from 'node:http';
import type { Duplex, Readable, Transform } from 'node:stream';
import type { Exchange } from './exchange.ts';
import type { HeaderMap, Reply } from './reply.ts';

/** TLS settings for connections from the gateway to an upstream (the `backendTLS` policy's shape, resolved). */
export interface UpstreamTls {
  /** PEM client certificate and key, for mutual TLS. */
  cert?: string;
  key?: string;
  /** PEM CA bundle; system roots when absent. */
  ca?: string;
  /** SNI and verification name. */
  servername?: string;
  /** Skip all verification. */
  insecure?: boolean;
  /** Verify the chain but not the name. */
  insecureHost?: boolean;
  alpn?: string[];
  /** Accepted subject alternative names, replacing the hostname check. */
  subjectAltNames?: string[];
}

/** How to reach one upstream origin. */
export interface UpstreamTargetOptions {
  /** `http://host:port` or `https://host:port`. */
  origin: string;
  tls?: UpstreamTls;
  /**
   * Speak HTTP/2 (the `http` policy's `version: HTTP/2.0`): with prior knowledge (h2c) to an `http:` origin, offered
   * by ALPN to an `https:` one. Default: HTTP/1.1 (and ALPN as `tls.alpn` says).
   */
  http2?: boolean;
  /**
   * Host header sent upstream when no policy rewrote the authority: `target` (the upstream's host[:port], the
   * default for DNS names) or `request` (keep the client's Host, the default for IP literals).
   */
  authority?: 'target' | 'request';
}

/**
 * Where the API being called takes a static credential, when it says so (an OpenAPI operation's security scheme):
 * a `backendAuth.key` without a `location` of its own puts the key there (ADR 0175).
 */
export type CredentialLocation =
  | { readonly header: { readonly name: string; readonly prefix?: string } }
  | { readonly queryParameter: { readonly name: string } }
  | { readonly cookie: { readonly name: string } };

/** A request a plugin sends on its own account (an MCP call, an OpenAPI tool call, a token fetch). */
export interface UpstreamCallOptions {
  method: string;
  /** Path and query. */
  path: string;
  headers?: HeaderMap;
  body?: string | Uint8Array | Readable | null;
  signal?: AbortSignal;
  /** Milliseconds until the whole call fails with a timeout. */
  timeoutMs?: number;
  /** Milliseconds until the response headers must have arrived (a 504 `GatewayError`; the connection is closed). */
  headersTimeoutMs?: number;
  /** Longest silence inside the response body in ms: the body then fails with code `UND_ERR_BODY_TIMEOUT`. */
  idleTimeoutMs?: number;
  /**
   * Runs just before the request is sent, with its headers to change (a policy set's `attemptHook`: backendAuth).
   * A throw or rejection fails the call with that error.
   */
  onAttempt?: (attempt: UpstreamAttempt) => void | Promise<void>;
  /** Where the API takes a static credential, for the hooks (`UpstreamAttempt.credentialLocation`). */
  credentialLocation?: CredentialLocation;
  /** What the upstream is for this call (`the rate limit service`): the `switchyard.upstream.purpose` of its span. */
  what?: string;
}

/** How `UpstreamTarget.forward` returns the answer. */
export interface ForwardOptions {
  /**
   * Read the answer whole, up to this many bytes: the Reply's `body` is then a Buffer (cheaper than a stream read
   * whole afterwards). Rejects only as a streamed forward would, before the answer starts; when the body fails after
   * that (over the limit: a `BodyTooLargeError`; the upstream breaking off) the `body` is a stream failing with it.
   */
  readonly readWhole?: number;
  /**
   * A streamed answer (no `readWhole`) keeps the upstream's raw header list: the Reply is a `RawHeadersReply` whose
   * header object is made only when `headers` is read (`replyHeader` reads one name without it), and the reply
   * writer sends the list as the plain route does.
   */
  readonly rawHeaders?: boolean;
}

/** What came back from `UpstreamTarget.request`. */
export interface UpstreamResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: Readable;
}

/**
 * A reader of an upgraded connection's upstream-to-client bytes (an LLM realtime session's usage, ADR 0190), made
 * when the upstream switched protocols. What it outputs is written to the client; it may hold bytes back (the client
 * waits), and add its own. `close` ends the connection from the gateway: the client-to-upstream relay stops and the
 * upstream connection closes at once; the client's side ends once the stream's output (which should end, after what
 * the protocol says on closing) is written, and is destroyed if the client has not closed it within a few seconds.
 * `early`: what the client sent after its request and before the switch (replayed to the upstream after `head`).
 */
export type UpgradeRelay = (close: (cause: string) => void, early: readonly Buffer[]) => Transform;

/** A reusable connection pool to one upstream origin, shared across reloads while unchanged. */
export interface UpstreamTarget {
  readonly origin: string;
  /**
   * Forward the exchange as a reverse proxy: streams the body both ways, strips hop-by-hop headers, adds
   * X-Forwarded-*, applies the route's timeouts and retries and the per-attempt upstream hooks. `onAttempt` (the
   * backend's own signer, say) runs on every attempt after those hooks.
   */
  forward(ex: Exchange, onAttempt?: (attempt: UpstreamAttempt) => void | Promise<void>, options?: ForwardOptions): Promise<Reply>;
  /**
   * Pass a WebSocket (or other HTTP/1.1 upgrade) through to this upstream. `onAttempt` (the backend's own signer or
   * key conventions) runs on the upgrade request after the per-attempt upstream hooks, as for `forward`. `relay`: what
   * the upstream's bytes pass through on their way to the client once it switched protocols (ADR 0190).
   */
  upgrade(ex: Exchange, socket: Duplex, head: Buffer, onAttempt?: (attempt: UpstreamAttempt) => void | Promise<void>, relay?: UpgradeRelay): void;
  /** Send a request of the caller's own through this pool. */
  request(options: UpstreamCallOptions): Promise<UpstreamResponse>;
}

/** Creates upstream targets; pools are keyed by origin and TLS settings and survive config reloads. */
export interface HttpUpstreams {
  target(options: UpstreamTargetOptions): UpstreamTarget;
}

/** One upstream attempt, as the per-attempt hooks see it (backendAuth signs here, each retry again). */
export interface UpstreamAttempt {
  readonly method: string;
  /**
   * Path and query sent upstream. A hook may change it (a `backendAuth` key in a query parameter); traces keep the
   * path as it was before the hooks, so such a secret is not recorded.
   */
  path: string;
  readonly origin: string;
  /** Headers to send; hooks mutate them. */
  readonly headers: IncomingHttpHeaders;
  /** The request body when it was read into memory (a policy's `needs.body`, `ex.bufferBody()`, or retry replay). */
  readonly body: Buffer | undefined;
  /** 0 for the first try, then 1, 2, ... */
  readonly attempt: number;
  /** Where the API takes a static credential, when the caller knows (an OpenAPI tool call); else `Authorization`. */
  readonly credentialLocation?: CredentialLocation;
}
