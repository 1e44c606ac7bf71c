import type { Socket } from 'node:net';
import type { buildConnector, Client, Pool } from 'undici';

/**
 * Close connections an undici pool opened for nothing (undici issue #5845, open at the time of writing).
 *
 * Aborting an in-flight HTTP/1 request (the client went away, a deadline fired) destroys its socket, but the
 * `Client` puts the aborted request back in its queue, connects again for it and only then drops it. The new
 * connection serves nothing and stays open at the upstream until the pool's keep-alive timeout (30 s): after 30
 * clients gave up, the upstream still held one connection per aborted request.
 *
 * undici writes any waiting request synchronously inside the connector's callback (connect event, then resume). So
 * a client whose queue is empty right after that callback returns got a connection no request needs: it is closed
 * at once (the client connects again when a request comes). Costs one check per new connection, none per request.
 */
export class ConnectGuard {
  private readonly base: buildConnector.connector;
  /** The client the pool reported connected during the current connector callback. */
  private connected: Client | undefined = undefined;

  constructor(base: buildConnector.connector) {
    this.base = base;
  }

  readonly connect: buildConnector.connector = (opts, callback) => {
    this.base(opts, (err, socket) => {
      this.connected = undefined;
      (callback as (err: Error | null, socket: Socket | null) => void)(err, socket as Socket | null);
      const client = this.connected as Client | undefined;
      this.connected = undefined;
      if (err === null && socket && client !== undefined && client.stats.size === 0 && !socket.destroyed) socket.destroy();
    });
  };

  /** Follow `pool`'s connect events (the pool is built with `connect: guard.connect`, so it comes second). */
  watch(pool: Pool): void {
    pool.on('connect', (_origin, targets) => {
      this.connected = targets[targets.length - 1] as Client;
    });
  }
}
