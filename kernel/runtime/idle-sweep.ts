// Closing idle keep-alive client connections by one sweep per second instead of node:http's `keepAliveTimeout`.
// node:http arms that timeout on every finished response (a `Timeout` and a bound callback) and clears it when the
// next request arrives: two timer-list operations per request, ~3% of the plain route's CPU (docs/perf.md "Plain
// route CPU, session 9"). The bind servers run with `keepAliveTimeout: 0` and this sweep closes what node:http would.
import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/** What clients are told (`Keep-Alive: timeout=65`), as node:http's `keepAliveTimeout` was set. */
export const KEEP_ALIVE_MS = 65_000;
/** node:http closes an idle connection this long after its last response (its `keepAliveTimeoutBuffer`: 1 s). */
export const IDLE_CLOSE_MS = KEEP_ALIVE_MS + 1_000;
export const SWEEP_MS = 1_000;

const kMoved = Symbol('bytesMoved');
const kQuietSince = Symbol('quietSince');
/** When a sweep first saw the request body stalled (see `sweepIdle`); -1 when it is not. */
const kStalledSince = Symbol('stalledSince');
/** Set on a connection the lean server side serves (lean-connection.ts): an HTTP connection without node's parser. */
export const LEAN = Symbol('switchyard.lean');

/** node:http's fields of a server connection: the response being written, and its parser (null once upgraded). */
export type SweptSocket = Socket & {
  _httpMessage?: ServerResponse | null;
  parser?: unknown;
  [kMoved]?: number;
  [kQuietSince]?: number;
  [kStalledSince]?: number;
  [LEAN]?: true | undefined;
};

/** A response tells the client the keep-alive timeout, which node:http writes only from `_keepAliveTimeout`. */
export function announceKeepAlive(res: ServerResponse): void {
  (res as ServerResponse & { _keepAliveTimeout: number })._keepAliveTimeout = KEEP_ALIVE_MS;
}

/** A new connection: quiet from now. */
export function trackSocket(socket: SweptSocket, now: number): void {
  socket[kMoved] = 0;
  socket[kQuietSince] = now;
  socket[kStalledSince] = -1;
}

/**
 * Close connections idle for `limitMs`: between requests (no response being written, still an HTTP connection: an
 * upgraded or CONNECT socket has no parser and is never closed here: an upgraded one has its own idle timeout,
 * upgrade-forward.ts; a lean connection, without one either, is), and
 * no byte read or written since a sweep saw one move. Activity is seen at sweep granularity, so a connection closes 0-1 sweep later than node:http would
 * close it, never earlier.
 *
 * With `bodyIdleMs`, also close a connection whose request body stopped arriving before any answer was started (no
 * byte either way for `bodyIdleMs`, 0-2 sweeps late): a body read whole before it is sent (ADR 0050) runs no upstream
 * deadline yet, so a client that stops mid-body would hold the connection for ever (ADR 0092; Envoy's stream idle
 * timeout, `config.defaultTimeouts.streamIdleTimeout`).
 */
export function sweepIdle(sockets: Iterable<SweptSocket>, now: number, limitMs = IDLE_CLOSE_MS, bodyIdleMs = 0): void {
  for (const socket of sockets) {
    const moved = socket.bytesRead + socket.bytesWritten;
    const res = socket._httpMessage;
    if (moved !== socket[kMoved] || res || (!socket.parser && socket[LEAN] === undefined)) {
      const quiet = moved === socket[kMoved];
      socket[kMoved] = moved;
      socket[kQuietSince] = now;
      if (quiet && bodyIdleMs > 0 && res && !res.headersSent && !res.req.complete) {
        const since = socket[kStalledSince]! >= 0 ? socket[kStalledSince]! : (socket[kStalledSince] = now);
        if (now - since >= bodyIdleMs) socket.destroy();
      } else socket[kStalledSince] = -1;
    } else if (now - (socket[kQuietSince] ?? now) >= limitMs) socket.destroy();
  }
}
