import type { Server as HttpServer, IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import type { Logger } from '../sdk/index.ts';
import type { CompiledBind, Snapshot, StaticConfig } from '../compile/snapshot.ts';
import type { RequestPipeline } from './request-pipeline.ts';
import { announceKeepAlive, IDLE_CLOSE_MS, LEAN, SWEEP_MS, sweepIdle, trackSocket } from './idle-sweep.ts';
import type { SweptSocket } from './idle-sweep.ts';
import { ProxyResponse } from './proxy-response.ts';
import { shouldUpgrade } from './request-input.ts';
import { afterAnswerInFlight, serveConnect, serveDeclinedUpgrade } from './declined-upgrade.ts';
import { LeanConnection } from './lean-connection.ts';
import { markVerifiedClient } from '../exchange/client-certificate.ts';
import { defaultTlsSettings } from '../compile/listener-tls-settings.ts';
import type { LeanBind } from './lean-connection.ts';
import { ALPN_PROTOCOLS, H2Sessions } from './h2-sessions.ts';
import { continueWhenRead } from './expect-continue.ts';
import { H2_PREFACE_ERROR, takeH2cConnection } from './h2c-preface.ts';
import { DEFAULT_FRONTEND_HTTP2 } from '../compile/frontend-http.ts';
import { onClientError } from './client-error.ts';
import type { ClientSocket } from './client-error.ts';

// Not `import ... from 'node:http'`: an ES import builds http's namespace, which reads its lazy WebSocket getters and so
// loads Node's bundled undici (about 13 MiB and 25 ms at start, docs/perf.md "Startup").
const { createServer: createHttpServer } = process.getBuiltinModule('node:http');

interface BindServer {
  readonly port: number;
  readonly address: string | undefined;
  readonly secure: boolean;
  readonly server: HttpServer;
  listening: boolean;
  /** The lean server side's connections of a cleartext bind (ADR 0088); null: node:http serves every connection. */
  readonly lean: Set<LeanConnection> | null;
  /** The HTTP/2 connections (ADR 0141); on a cleartext bind made by its first h2c client (ADR 0158), null until then. */
  h2: H2Sessions | null;
}

/** node:http options of a bind; the header timeout and connection cap come from `config`. */
function serverOptions(statics: StaticConfig) {
  return {
    // Whole-request deadlines belong to routes (`timeout` policy); long uploads and streams are legitimate.
    requestTimeout: 0,
    headersTimeout: statics.headerTimeoutMs,
    // node:http checks the header deadline on this period (default 30 s): a fraction of it keeps the 408 on time.
    connectionsCheckingInterval: Math.max(50, Math.min(30_000, Math.floor(statics.headerTimeoutMs / 4))),
    // Idle connections are closed by the bind's sweep after 65 s (idle-sweep.ts): node:http's own keep-alive timeout
    // costs a timer set and cleared per request.
    keepAliveTimeout: 0,
    // Writes an upstream answer's checked head without node:http checking it again (ADR 0082).
    ServerResponse: ProxyResponse,
    // `Upgrade: h2c` is served as a plain request, never relayed as an upgrade (ADR 0092).
    shouldUpgradeCallback: shouldUpgrade,
    // Keep the smaller headers limit of Node; oversized headers get 431 from node:http.
  };
}

/**
 * Resolves when a connection whose request head is partly received at the drain closes. node:http's header deadline
 * stops with its server (`close` clears its check), so the drain bounds the head itself: still unfinished `headerMs`
 * from now (node does not say when it began, so never sooner than node would have cut it), it is closed. 0: no bound.
 */
function headClosed(socket: SweptSocket, headerMs: number): Promise<void> {
  return new Promise((resolve) => {
    const timer =
      headerMs > 0
        ? setTimeout(() => {
            // A head that ended in time is a request being answered: the drain's own deadline bounds it.
            if (!socket._httpMessage) socket.destroy();
          }, headerMs)
        : undefined;
    socket.once('close', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

/** Envoy's handshake bound (agentgateway's `handshakeTimeout` default); node:tls waits 120 s. */
const HANDSHAKE_TIMEOUT_MS = 15_000;

/** node:tls options of a TLS bind (ADR 0138). */
function tlsServerOptions(statics: StaticConfig) {

  return {
    // A client that opens TLS and never finishes the handshake holds a socket: at most 15 s, and never longer than
    // the header deadline, which only starts once the handshake is done.
    handshakeTimeout: statics.headerTimeoutMs > 0 ? Math.min(HANDSHAKE_TIMEOUT_MS, statics.headerTimeoutMs) : HANDSHAKE_TIMEOUT_MS,
    // Client-initiated renegotiation (TLS 1.2) is refused, as Envoy (BoringSSL) does: each one costs the server a
    // handshake, and node:tls allows three per 10 minutes per connection.
    secureOptions: process.getBuiltinModule('node:crypto').constants.SSL_OP_NO_RENEGOTIATION,
  };
}

/** Whether a bind's clients are asked for a certificate: one of its listeners has `tls.root`. */
function asksClientCertificates(bind: CompiledBind): boolean {
  return bind.listeners.some((l) => l.clientCertificates);
}

/** One node:http(s) server per bind port, reconciled against each new snapshot. */
export class BindServers {
  private readonly servers = new Map<number, BindServer>();
  private readonly pipeline: RequestPipeline;
  private readonly logger: Logger;
  private readonly sockets = new Set<Socket>();
  /** The connections node:http serves (for TLS the TLSSockets), for the idle sweep. */
  private readonly swept = new Set<SweptSocket>();
  /** Closes idle keep-alive connections (idle-sweep.ts); runs while any connection is open. */
  private sweep: NodeJS.Timeout | null = null;

  /** Listen with `SO_REUSEPORT`: one of several worker threads serving the same ports (the kernel spreads connections). */
  private readonly reusePort: boolean;

  /** Cleartext binds parse common requests themselves (ADR 0088); false (`SWITCHYARD_LEAN_HTTP=off`): node:http only. */
  private readonly leanHttp: boolean;

  constructor(pipeline: RequestPipeline, logger: Logger, reusePort = false, leanHttp = true) {
    this.pipeline = pipeline;
    this.logger = logger;
    this.reusePort = reusePort;
    this.leanHttp = leanHttp;
  }

  /** Start servers for new ports, stop removed ones, refresh TLS. Rejects if a new port cannot be bound. */
  async apply(snapshot: Snapshot): Promise<void> {
    const failures: string[] = [];
    for (const [port, existing] of this.servers) {
      const bind = snapshot.binds.get(port);
      if (!bind || bind.secure !== existing.secure || bind.address !== existing.address) {
        this.servers.delete(port);
        await this.closeServer(existing);
      } else if (bind.secure) {
        this.setDefaultCertificate(bind);
      }
    }
    for (const bind of snapshot.binds.values()) {
      if (this.servers.has(bind.port)) continue;
      try {
        await this.open(bind, snapshot.staticConfig);
      } catch (err) {
        failures.push(`port ${bind.port}: ${(err as Error).message}`);
      }
    }
    if (failures.length) throw new Error(`cannot listen on ${failures.join('; ')}`);
  }

  /**
   * Give `bind`'s server its first HTTPS listener's certificate for clients without SNI, and whether clients are
   * asked for one (after a reload or a renewal).
   */
  setDefaultCertificate(bind: CompiledBind): void {
    const pem = bind.listeners.find((l) => l.tlsPem)?.tlsPem;
    const existing = this.servers.get(bind.port);
    if (!pem || !existing?.secure) return;
    const server = existing.server as unknown as { setSecureContext(o: object): void; requestCert: boolean };
    // Every setting given: node:tls's setSecureContext keeps a previous minVersion, maxVersion or ciphers left out.
    server.setSecureContext({ ...pem, ...(bind.tlsSettings ?? defaultTlsSettings()), honorCipherOrder: true });
    // Read by node:tls for each new connection (setSecureContext leaves it as it was).
    server.requestCert = asksClientCertificates(bind);
  }

  private open(bind: CompiledBind, statics: StaticConfig): Promise<void> {
    const port = bind.port;
    const pipeline = this.pipeline;
    let server: HttpServer;
    if (bind.secure) {
      const pem = bind.listeners.find((l) => l.tlsPem)?.tlsPem;
      // node:https (and node:tls) only for a TLS bind: a cleartext config never loads them (docs/perf.md, session 10b).
      server = process.getBuiltinModule('node:https').createServer({
        ...serverOptions(statics),
        ...tlsServerOptions(statics),
        cert: pem?.cert,
        key: pem?.key,
        ca: pem?.ca,
        // The listeners' minTLSVersion, maxTLSVersion, cipherSuites (they agree, ADR 0140); the server's suite order wins.
        ...bind.tlsSettings,
        honorCipherOrder: true,
        // h2 first, as Envoy and agentgateway offer it; a client offering neither is refused (ADR 0141).
        ALPNProtocols: ALPN_PROTOCOLS,
        // Asked of every client of a port where a listener has `tls.root` (node:tls asks per server, not per SNI
        // name): the listener its SNI selects decides, after the handshake, whether one was required (secureConnection
        // below). A reload sets it again (setDefaultCertificate).
        requestCert: asksClientCertificates(bind),
        rejectUnauthorized: false,
        SNICallback: (servername, cb) => cb(null, pipeline.snapshot?.binds.get(port)?.tlsListener(servername)?.secureContext),
      }) as unknown as HttpServer;
    } else {
      server = createHttpServer(serverOptions(statics)) as unknown as HttpServer;
    }
    const lean = !bind.secure && this.leanHttp ? this.leanSide(server, port, statics.headerTimeoutMs) : null;
    const h2 = bind.secure ? this.h2Side(server, port) : null;
    if (statics.maxConnectionsPerBind > 0) server.maxConnections = statics.maxConnectionsPerBind;
    const secure = bind.secure;
    const serve = (req: IncomingMessage, res: ServerResponse): void => {
      announceKeepAlive(res);
      pipeline.handle(req, res, port, secure);
    };
    server.on('request', serve);
    server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => {
      continueWhenRead(req, res);
      serve(req, res);
    });
    server.on('upgrade', (req, socket, head) =>
      afterAnswerInFlight(socket as Socket, () => {
        if (shouldUpgrade(req)) pipeline.upgrade(req, socket, head, port, secure);
        // Only on a Node that ignores `shouldUpgradeCallback` (before 22.21 / 24.9).
        else serveDeclinedUpgrade(req, socket as Socket, (res) => pipeline.handle(req, res, port, secure));
      }),
    );
    // Without a listener node:http closes a CONNECT's connection unanswered, unlogged (ADR 0166).
    server.on('connect', (req, socket) => afterAnswerInFlight(socket as Socket, () => serveConnect(req, socket as Socket, (res) => pipeline.handle(req, res, port, secure))));
    server.on('clientError', (err: NodeJS.ErrnoException, socket: ClientSocket) => {
      // A cleartext client speaking HTTP/2 with prior knowledge (ADR 0158): llhttp stopped at the preface.
      if (err.code === H2_PREFACE_ERROR && !secure && takeH2cConnection(err, socket)) return this.h2c(entry, socket);
      onClientError(err, socket, (status) => pipeline.refused(port, status));
    });
    // The idle sweep sees the sockets node:http serves: the TCP ones, or for TLS the TLSSocket over each. One 'close'
    // listener per socket: node:http adds and removes one of its own on every request, so the list stays short.
    server.on('connection', (socket: Socket) => {
      this.sockets.add(socket);
      if (!secure) this.sweepAlso(socket);
      socket.once('close', () => {
        this.sockets.delete(socket);
        this.swept.delete(socket);
      });
    });
    if (secure) {
      server.on('secureConnection', (socket: TLSSocket) => {
        // Mutual TLS (`tls.root`): a client without a certificate that CA verifies gets no answer (ADR 0138); one
        // with is shown to CEL (ADR 0140).
        if (pipeline.snapshot?.binds.get(port)?.tlsListener(socket.servername || '')?.clientCertificates) {
          if (!socket.authorized) return void socket.destroy();
          markVerifiedClient(socket);
        }
        // An h2 session has its own idle close (h2-sessions.ts); the sweep reads node:http's per-connection state.
        if (socket.alpnProtocol === 'h2') return;
        this.sweepAlso(socket);
        socket.once('close', () => this.swept.delete(socket));
      });
    }
    const entry: BindServer = { port, address: bind.address, secure, server, listening: false, lean, h2 };
    this.servers.set(port, entry);
    return new Promise<void>((resolve, reject) => {
      const tryListen = (host: string): void => {
        const onError = (err: NodeJS.ErrnoException): void => {
          if (host === '::' && bind.address === undefined && (err.code === 'EAFNOSUPPORT' || err.code === 'EADDRNOTAVAIL')) return tryListen('0.0.0.0');
          this.servers.delete(port);
          reject(err);
        };
        server.once('error', onError);
        server.listen({ port, host, ipv6Only: false, ...(this.reusePort ? { reusePort: true } : {}) }, () => {
          server.off('error', onError);
          entry.listening = true;
          if (!this.reusePort) this.logger.info('bind listening', { port, address: bind.address ?? 'every interface', tls: secure });
          resolve();
        });
      };
      tryListen(bind.address ?? '::');
    });
  }

  /**
   * The lean server side of a cleartext bind (ADR 0088): node:http's connection listener comes off the server and
   * ours takes each new connection, handing it back to node's (still the server's own) when a request is not the lean
   * path's. The server keeps listening, counting connections and checking node's deadlines as before.
   */
  private leanSide(server: HttpServer, port: number, headerTimeoutMs: number): Set<LeanConnection> {
    const nodeConnection = server.listeners('connection')[0] as LeanBind['nodeConnection'];
    server.off('connection', nodeConnection);
    const open = new Set<LeanConnection>();
    const lean: LeanBind = { server, port, nodeConnection, serving: this.pipeline, headerTimeoutMs, open };
    server.on('connection', (socket: Socket) => void new LeanConnection(socket, lean));
    return open;
  }

  /**
   * HTTP/2 on a TLS bind (ADR 0141): node:https's connection listener comes off the server and ours hands each
   * connection that negotiated h2 to the bind's sessions, every other one back to node's (HTTP/1.1 as before).
   */
  private h2Side(server: HttpServer, port: number): H2Sessions {
    const sessions = this.h2Sessions(port, true);
    const nodeSecureConnection = server.listeners('secureConnection')[0] as (this: HttpServer, socket: TLSSocket) => void;
    server.off('secureConnection', nodeSecureConnection);
    server.on('secureConnection', function (this: HttpServer, socket: TLSSocket) {
      if (socket.alpnProtocol === 'h2') sessions.accept(socket);
      else nodeSecureConnection.call(this, socket);
    });
    return sessions;
  }

  /** The bind's HTTP/2 sessions, serving its streams as requests of the bind. */
  private h2Sessions(port: number, secure: boolean): H2Sessions {
    const pipeline = this.pipeline;
    return new H2Sessions(
      (req, res) => pipeline.handle(req as unknown as IncomingMessage, res as unknown as ServerResponse, port, secure),
      () => pipeline.snapshot?.staticConfig.defaultTimeouts.streamIdleMs ?? 0,
      IDLE_CLOSE_MS,
      () => pipeline.snapshot?.staticConfig.frontendHttp2 ?? DEFAULT_FRONTEND_HTTP2,
    );
  }

  /** A cleartext connection taken from node:http at the HTTP/2 preface: an h2 session has its own idle close. */
  private h2c(entry: BindServer, socket: Socket): void {
    this.swept.delete(socket);
    (entry.h2 ??= this.h2Sessions(entry.port, false)).accept(socket);
  }

  private sweepAlso(socket: SweptSocket): void {
    trackSocket(socket, performance.now());
    this.swept.add(socket);
    this.sweep ??= setInterval(() => this.sweepIdle(), SWEEP_MS).unref();
  }

  private sweepIdle(): void {
    if (this.swept.size === 0 && this.sweep !== null) {
      clearInterval(this.sweep);
      this.sweep = null;
      return;
    }
    sweepIdle(this.swept, performance.now(), IDLE_CLOSE_MS, this.pipeline.snapshot?.staticConfig.defaultTimeouts.streamIdleMs ?? 0);
  }

  /** Ports of the snapshot that are not listening yet. */
  pending(snapshot: Snapshot): number[] {
    return [...snapshot.binds.keys()].filter((port) => !this.servers.get(port)?.listening);
  }

  private closeServer(entry: BindServer): Promise<void> {
    entry.listening = false;
    return new Promise((resolve) => {
      entry.server.close(() => resolve());
      entry.server.closeIdleConnections();
      entry.h2?.closeAll();
      if (entry.lean !== null) for (const connection of entry.lean) connection.closeIfIdle();
    });
  }

  /** Stop accepting connections on every bind; in-flight requests go on. */
  stopAccepting(): Promise<void>[] {
    const closed: Promise<void>[] = [];
    for (const entry of this.servers.values()) closed.push(this.closeServer(entry));
    this.servers.clear();
    return closed;
  }

  /**
   * Close keep-alive connections that sit idle (during drain); an answer in flight whose head is not written yet
   * says `Connection: close` (Envoy's drain), so its client sends no next request on a connection about to close.
   * Called after `stopAccepting`. Resolves once the connections inside a request not answered yet have closed.
   */
  closeIdle(): Promise<void> {
    const begun: Promise<void>[] = [];
    const headerMs = this.pipeline.snapshot?.staticConfig.headerTimeoutMs ?? 0;
    // The sockets node:http serves: for a TLS bind the TLSSocket, whose TCP socket never carries `_httpMessage` (read
    // on that one, every TLS connection looked idle and a request in flight was cut when the drain began).
    for (const socket of this.swept) {
      const res = socket._httpMessage;
      // An upgraded connection (no parser, not the lean side's) is no idle one: it lives to the drain deadline.
      if (!socket.parser && socket[LEAN] === undefined) continue;
      if (res) {
        if (!res.headersSent) res.shouldKeepAlive = false;
      } else if (socket[LEAN] !== undefined) socket.destroy();
      // node:http closed its idle connections (`closeIdleConnections`, by `stopAccepting`); one it kept has a request
      // begun, its head partly received: answered with `Connection: close` once complete, and the drain waits for it
      // as Envoy's waits for a stream begun (ADR 0184).
      else if (!socket.destroyed) begun.push(headClosed(socket, headerMs));
    }
    return Promise.all(begun).then(() => undefined);
  }

  /** Cut every remaining connection (drain deadline passed). */
  destroyAll(): void {
    for (const socket of this.sockets) socket.destroy();
    this.sockets.clear();
  }
}
