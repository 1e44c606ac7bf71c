// HTTP/2 on an HTTPS bind (ADR 0141): the bind's node:https server negotiates `h2` or `http/1.1` by ALPN; a
// connection that chose h2 is handed to a node:http2 server that never listens, whose compatibility layer makes
// node:http-like request and response objects (h2-messages.ts) for the same request pipeline. HTTP/1.1 connections
// stay node:https's, exactly as before.
import type { Http2Server, Http2ServerRequest, Http2ServerResponse, ServerHttp2Session, ServerHttp2Stream } from 'node:http2';
import type { Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { IDLE_CLOSE_MS } from './idle-sweep.ts';
import { continueWhenRead } from './expect-continue.ts';
import { h2MessageClasses } from './h2-messages.ts';
import { keepAlive } from './h2-keepalive.ts';
import { DEFAULT_FRONTEND_HTTP2 } from '../compile/frontend-http.ts';
import type { FrontendHttp2 } from '../compile/frontend-http.ts';

/** What an HTTPS bind offers in ALPN, most preferred first: a client offering neither is refused (RFC 7301). */
export const ALPN_PROTOCOLS = ['h2', 'http/1.1'];

/** Streams one connection may have open at once (SETTINGS_MAX_CONCURRENT_STREAMS); nginx says 128, Go 250. */
export const MAX_CONCURRENT_STREAMS = 100;
/** Header fields per request (node:http keeps 2,000); the list size above bounds them sooner (about 500). */
const MAX_HEADER_PAIRS = 2_000;
/** Memory one session may hold in node:http2's buffers (MiB, its default): past it new streams are refused. */
const MAX_SESSION_MEMORY_MIB = 10;

/**
 * Envoy's premature-reset rule (its answer to rapid reset, CVE-2023-44487): once a connection has closed this many
 * streams, more than half of them reset within `PREMATURE_MS` of their start closes the connection (GOAWAY
 * ENHANCE_YOUR_CALM). Each reset stream is work started and thrown away; nghttp2's own limit counts only resets of
 * streams not yet answered in its eyes, which a request waiting for its body or its upstream is not. Resets either
 * way count (node:http2 does not say who reset a stream); the gateway resets few (a broken upstream answer).
 */
const PREMATURE_MIN_STREAMS = 100;
const PREMATURE_MS = 1_000;
/** RFC 9113 7: ENHANCE_YOUR_CALM. */
const ENHANCE_YOUR_CALM = 0xb;

/** A session's open streams (for the idle close), its closed ones and those reset early (premature resets). */
const kOpen = Symbol('switchyard.h2OpenStreams');
const kClosed = Symbol('switchyard.h2ClosedStreams');
const kPremature = Symbol('switchyard.h2PrematureResets');
type Session = ServerHttp2Session & { [kOpen]: number; [kClosed]: number; [kPremature]: number };

/** RFC 9113 7: CANCEL. */
const CANCEL = 0x8;

/**
 * The SETTINGS values of `frontendPolicies.http` (ADR 0158). The header list bound (RFC 9113 6.5.2: names and values
 * plus 32 bytes each) defaults to node:http's 16 KiB head limit of HTTP/1.1 clients; past it node answers 431 before
 * any routing.
 */
function sessionSettings(s: FrontendHttp2): { initialWindowSize: number; maxFrameSize: number; maxHeaderListSize: number } {
  return { initialWindowSize: s.windowSize, maxFrameSize: s.frameSize, maxHeaderListSize: s.maxHeaderListBytes };
}

/** A stream silent for the stream idle timeout: reset when its body is still due and nothing was answered. */
function stalled(stream: ServerHttp2Stream): void {
  if (stream.headersSent || stream.destroyed || stream.state.remoteClose === 1) return;
  stream.close(CANCEL);
}

/** The h2 side of one HTTPS bind: its sessions, their bounds and idle close. */
export class H2Sessions {
  private readonly server: Http2Server;
  private readonly sessions = new Set<Session>();
  private readonly idleMs: number;
  private readonly bodyIdleMs: () => number;
  private readonly settings: () => FrontendHttp2;
  /** The settings new sessions get (the server's SETTINGS frame), from `settings()` when the last one was accepted. */
  private applied: FrontendHttp2 = DEFAULT_FRONTEND_HTTP2;

  /**
   * `bodyIdleMs`: `config.defaultTimeouts.streamIdleTimeout` now (0: none); `idleMs`: how long a session without
   * streams or frames stays open (the HTTP/1.1 idle close's); `settings`: `frontendPolicies.http` now (ADR 0158).
   */
  constructor(
    onRequest: (req: Http2ServerRequest, res: Http2ServerResponse) => void,
    bodyIdleMs: () => number,
    idleMs = IDLE_CLOSE_MS,
    settings: () => FrontendHttp2 = () => DEFAULT_FRONTEND_HTTP2,
  ) {
    this.idleMs = idleMs;
    this.bodyIdleMs = bodyIdleMs;
    this.settings = settings;
    const http2 = process.getBuiltinModule('node:http2');
    const { H2Request, H2Response } = h2MessageClasses();
    this.server = http2.createServer({
      Http2ServerRequest: H2Request,
      Http2ServerResponse: H2Response,
      maxSessionMemory: MAX_SESSION_MEMORY_MIB,
      maxHeaderListPairs: MAX_HEADER_PAIRS,
      settings: { maxConcurrentStreams: MAX_CONCURRENT_STREAMS, ...sessionSettings(DEFAULT_FRONTEND_HTTP2) },
    });
    this.server.on('request', onRequest);
    // `Expect: 100-continue` as over HTTP/1.1 (ADR 0185): without this listener node:http2 sends 100 on arrival.
    this.server.on('checkContinue', (req: Http2ServerRequest, res: Http2ServerResponse) => {
      continueWhenRead(req, res);
      onRequest(req, res);
    });
    // CONNECT (node:http2 answers 405 itself when nothing listens, before the pipeline: no log line, not counted). The
    // pipeline refuses it as a local answer (405, ADR 0158); extended CONNECT (RFC 8441) is not advertised.
    this.server.on('connect', onRequest);
    this.server.on('session', (session: Session) => this.track(session));
  }

  /** Serve a TLS connection that negotiated h2 (the bind's `secureConnection`), or an h2c one (h2c-preface.ts). */
  accept(socket: TLSSocket | Socket): void {
    const settings = this.settings();
    // A reload changed `frontendPolicies.http`: sessions from now on announce the new settings.
    if (settings !== this.applied) {
      this.applied = settings;
      this.server.updateSettings(sessionSettings(settings));
    }
    this.server.emit('connection', socket);
  }

  private track(session: Session): void {
    session[kOpen] = 0;
    session[kClosed] = 0;
    session[kPremature] = 0;
    this.sessions.add(session);
    const settings = this.applied;
    // The connection's window is no SETTINGS value: a WINDOW_UPDATE on stream 0 raises it from RFC 9113's 65,535.
    if (settings.connectionWindowSize !== DEFAULT_FRONTEND_HTTP2.connectionWindowSize) session.setLocalWindowSize(settings.connectionWindowSize);
    if (settings.keepaliveIntervalMs > 0) keepAlive(session, settings.keepaliveIntervalMs, settings.keepaliveTimeoutMs, () => session[kOpen] > 0);
    session.once('close', () => this.sessions.delete(session));
    session.on('stream', (stream: ServerHttp2Stream) => {
      session[kOpen]++;
      // A request body silent for the stream idle timeout before any answer: the stream is reset, as the HTTP/1.1
      // sweep closes such a connection (idle-sweep.ts). Its route may have no deadline, and a body read whole before
      // it is forwarded runs no upstream one yet; the stream would hold a slot of the session for ever.
      const bodyIdle = stream.endAfterHeaders ? 0 : this.bodyIdleMs();
      if (bodyIdle > 0) stream.setTimeout(bodyIdle, () => stalled(stream));
      const started = performance.now();
      stream.once('close', () => {
        session[kOpen]--;
        const closed = ++session[kClosed];
        if (stream.rstCode !== 0 && performance.now() - started < PREMATURE_MS) session[kPremature]++;
        if (closed >= PREMATURE_MIN_STREAMS && session[kPremature] * 2 > closed && !session.destroyed) session.destroy(undefined, ENHANCE_YOUR_CALM);
      });
    });
    // The HTTP/1.1 sweep's idle close (idle-sweep.ts) for sessions: no frame either way for as long and no stream
    // open. A quiet stream (a long poll, a gRPC stream waiting) keeps its session; its route's deadlines bound it.
    session.setTimeout(this.idleMs, () => {
      if (session[kOpen] === 0) session.close();
    });
  }

  /**
   * Drain: every session is told GOAWAY (`close`): streams in flight finish, the client opens no new one here, and
   * the connection ends when the last stream does.
   */
  closeAll(): void {
    for (const session of this.sessions) if (!session.closed) session.close();
  }
}
