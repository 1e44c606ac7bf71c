import { createServer as createHttpServer } from 'node:http';
import type { Server as HttpServer } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { Socket } from 'node:net';
import type { Logger } from '../sdk/index.ts';
import type { CompiledBind, Snapshot } from '../compile/snapshot.ts';
import type { RequestPipeline } from './request-pipeline.ts';

interface BindServer {
  readonly port: number;
  readonly secure: boolean;
  readonly server: HttpServer;
  listening: boolean;
}

const SERVER_OPTIONS = {
  // Whole-request deadlines belong to routes (`timeout` policy); long uploads and streams are legitimate.
  requestTimeout: 0,
  headersTimeout: 60_000,
  keepAliveTimeout: 65_000,
  // Keep the smaller headers limit of Node; oversized headers get 431 from node:http.
} as const;

/** One node:http(s) server per bind port, reconciled against each new snapshot. */
export class BindServers {
  private readonly servers = new Map<number, BindServer>();
  private readonly pipeline: RequestPipeline;
  private readonly logger: Logger;
  private readonly sockets = new Set<Socket>();

  constructor(pipeline: RequestPipeline, logger: Logger) {
    this.pipeline = pipeline;
    this.logger = logger;
  }

  /** Start servers for new ports, stop removed ones, refresh TLS. Rejects if a new port cannot be bound. */
  async apply(snapshot: Snapshot): Promise<void> {
    const failures: string[] = [];
    for (const [port, existing] of this.servers) {
      const bind = snapshot.binds.get(port);
      if (!bind || bind.secure !== existing.secure) {
        this.servers.delete(port);
        await this.closeServer(existing);
      } else if (bind.secure) {
        const pem = bind.listeners.find((l) => l.tlsPem)?.tlsPem;
        if (pem) (existing.server as unknown as { setSecureContext(o: object): void }).setSecureContext(pem);
      }
    }
    for (const bind of snapshot.binds.values()) {
      if (this.servers.has(bind.port)) continue;
      try {
        await this.open(bind);
      } catch (err) {
        failures.push(`port ${bind.port}: ${(err as Error).message}`);
      }
    }
    if (failures.length) throw new Error(`cannot listen on ${failures.join('; ')}`);
  }

  private open(bind: CompiledBind): Promise<void> {
    const port = bind.port;
    const pipeline = this.pipeline;
    let server: HttpServer;
    if (bind.secure) {
      const pem = bind.listeners.find((l) => l.tlsPem)?.tlsPem;
      server = createHttpsServer({
        ...SERVER_OPTIONS,
        cert: pem?.cert,
        key: pem?.key,
        SNICallback: (servername, cb) => {
          const current = pipeline.snapshot?.binds.get(port);
          const listener = current?.selectListener(servername.toLowerCase()) ?? current?.listeners.find((l) => l.secureContext);
          cb(null, listener?.secureContext);
        },
      }) as unknown as HttpServer;
    } else {
      server = createHttpServer(SERVER_OPTIONS);
    }
    const secure = bind.secure;
    server.on('request', (req, res) => pipeline.handle(req, res, port, secure));
    server.on('upgrade', (req, socket, head) => pipeline.upgrade(req, socket, head, port, secure));
    server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => {
      if (socket.writable && !socket.destroyed) {
        const status = err.code === 'HPE_HEADER_OVERFLOW' ? 431 : 400;
        const body = JSON.stringify({ error: { type: 'bad_request', message: `malformed HTTP request: ${err.code ?? err.message}` } });
        socket.end(`HTTP/1.1 ${status} Bad Request\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n${body}`);
      } else socket.destroy();
    });
    server.on('connection', (socket: Socket) => {
      this.sockets.add(socket);
      socket.once('close', () => this.sockets.delete(socket));
    });
    const entry: BindServer = { port, secure, server, listening: false };
    this.servers.set(port, entry);
    return new Promise<void>((resolve, reject) => {
      const tryListen = (host: string): void => {
        const onError = (err: NodeJS.ErrnoException): void => {
          if (host === '::' && (err.code === 'EAFNOSUPPORT' || err.code === 'EADDRNOTAVAIL')) return tryListen('0.0.0.0');
          this.servers.delete(port);
          reject(err);
        };
        server.once('error', onError);
        server.listen({ port, host, ipv6Only: false }, () => {
          server.off('error', onError);
          entry.listening = true;
          this.logger.info('bind listening', { port, tls: secure });
          resolve();
        });
      };
      tryListen('::');
    });
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
    });
  }

  /** Stop accepting connections on every bind; in-flight requests go on. */
  stopAccepting(): Promise<void>[] {
    const closed: Promise<void>[] = [];
    for (const entry of this.servers.values()) closed.push(this.closeServer(entry));
    this.servers.clear();
    return closed;
  }

  /** Close keep-alive connections that sit idle (during drain). */
  closeIdle(): void {
    for (const socket of this.sockets) {
      const s = socket as Socket & { _httpMessage?: unknown };
      if (!s._httpMessage) socket.destroy();
    }
  }

  /** Cut every remaining connection (drain deadline passed). */
  destroyAll(): void {
    for (const socket of this.sockets) socket.destroy();
    this.sockets.clear();
  }
}
