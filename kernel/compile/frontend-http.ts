import { parseDuration } from '../sdk/index.ts';

// `frontendPolicies.http` resolved (ADR 0158): the HTTP/2 settings every client connection gets, on HTTPS listeners
// (ALPN h2) and cleartext ones (prior knowledge). Read when a connection is accepted: a reload applies to new ones.

export interface FrontendHttp2 {
  /** SETTINGS_INITIAL_WINDOW_SIZE: each stream's receive window, bytes. */
  readonly windowSize: number;
  /** The connection's receive window, bytes (a WINDOW_UPDATE on stream 0 past the 65,535 of RFC 9113 6.9.2). */
  readonly connectionWindowSize: number;
  /** SETTINGS_MAX_FRAME_SIZE, bytes. */
  readonly frameSize: number;
  /** SETTINGS_MAX_HEADER_LIST_SIZE, bytes: a larger request header list is answered 431 before any routing. */
  readonly maxHeaderListBytes: number;
  /** A PING this often while streams are open (0: none). */
  readonly keepaliveIntervalMs: number;
  /** A PING unanswered this long closes the connection. */
  readonly keepaliveTimeoutMs: number;
}

/**
 * node:http2's windows and frame size (RFC 9113's initial values); the header list at node:http's 16 KiB head limit
 * of HTTP/1.1 clients (ADR 0141); no keep-alive PINGs, 20 s for an answer when they are on (the reference's).
 */
export const DEFAULT_FRONTEND_HTTP2: FrontendHttp2 = {
  windowSize: 65_535,
  connectionWindowSize: 65_535,
  frameSize: 16_384,
  maxHeaderListBytes: 16 * 1024,
  keepaliveIntervalMs: 0,
  keepaliveTimeoutMs: 20_000,
};

interface RawFrontendHttp {
  http2WindowSize?: number;
  http2ConnectionWindowSize?: number;
  http2FrameSize?: number;
  http2MaxHeaderSize?: number;
  http2KeepaliveInterval?: string;
  http2KeepaliveTimeout?: string;
}

/** The validated `frontendPolicies` block (ranges checked by the schema) as settings; absent keys keep the defaults. */
export function resolveFrontendHttp2(frontendPolicies: unknown): FrontendHttp2 {
  const http = (frontendPolicies as { http?: RawFrontendHttp } | undefined)?.http;
  if (http === undefined) return DEFAULT_FRONTEND_HTTP2;
  const d = DEFAULT_FRONTEND_HTTP2;
  const ms = (value: string | undefined, fallback: number): number => (value === undefined ? fallback : (parseDuration(value) ?? fallback));
  return {
    windowSize: http.http2WindowSize ?? d.windowSize,
    connectionWindowSize: http.http2ConnectionWindowSize ?? d.connectionWindowSize,
    frameSize: http.http2FrameSize ?? d.frameSize,
    maxHeaderListBytes: http.http2MaxHeaderSize ?? d.maxHeaderListBytes,
    keepaliveIntervalMs: ms(http.http2KeepaliveInterval, d.keepaliveIntervalMs),
    keepaliveTimeoutMs: ms(http.http2KeepaliveTimeout, d.keepaliveTimeoutMs),
  };
}
