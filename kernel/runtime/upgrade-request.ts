// The upgrade path (WebSocket and the other protocols `config.upgradeProtocols` enables): the request pipeline's route
// selection and request chain, then the backend's upgrade, and the upgraded connection's own log line and span.
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { GatewayError, jsonErrorReply } from '../sdk/index.ts';
import type { Logger, Reply } from '../sdk/index.ts';
import type { Snapshot } from '../compile/snapshot.ts';
import type { AccessLog } from '../telemetry/access-log.ts';
import type { Tracing } from '../telemetry/tracing.ts';
import type { RouteMetrics } from '../telemetry/metrics.ts';
import { writeRawResponse } from '../upstream/raw-response.ts';
import { upgradeAllowed } from '../upstream/upgrade-protocols.ts';
import { isPromiseLike } from '../sdk/settle-within.ts';
import type { UpgradeTap } from '../exchange/kernel-exchange.ts';
import { runRequestHooks } from '../compile/run-hooks.ts';
import { endFields, watchUpgradedConnection } from './upgraded-connection.ts';
import type { ExchangeImpl } from './exchange-impl.ts';
import { errorReply } from './reply-writer.ts';
import { pickBackend } from './backend-pick.ts';
import { makeExchange, noRoute, refused, requestListener, selectRoute } from './request-exchange.ts';

/** What the upgrade path reads of the request pipeline. */
export interface UpgradeServing {
  readonly snapshot: Snapshot | undefined;
  readonly tracing: Tracing | null;
  readonly accessLog: AccessLog;
  readonly logger: Logger;
  readonly unmatched: RouteMetrics;
}

/** node:http 'upgrade' handler (WebSocket): same selection and request chain, then the backend's upgrade. */
export function serveUpgradeRequest(pipeline: UpgradeServing, req: IncomingMessage, socket: Duplex, head: Buffer, port: number, secure: boolean): void {
  const { accessLog, logger } = pipeline;
  const snapshot = pipeline.snapshot!;
  snapshot.acquire();
  socket.once('close', () => snapshot.release());
  socket.on('error', () => socket.destroy());
  const ex = makeExchange(req, undefined, secure, snapshot);
  const tracing = pipeline.tracing;
  // The handshake's outcome (ADR 0055): told by the forwarder (`upgradeDone`: 101, the upstream's refusal, a gateway
  // error, 499) or by a refusal here, then logged, counted and traced once with the status the client got. A
  // backend that never tells (a plugin's own `upgrade`) is logged with 101 when the connection closes. A 101 with
  // the upstream socket starts watching the connection for its own log line and span (ADR 0055).
  let open = true;
  const end = (status: number, upstream?: Duplex): UpgradeTap | undefined => {
    if (!open) return undefined;
    open = false;
    ex.status = status;
    const elapsed = performance.now() - ex.startTime;
    accessLog.record(ex, elapsed);
    // Refused before a route was chosen: counted where a plain request's refusal is (ADR 0166).
    (ex.compiledRoute?.metrics ?? pipeline.unmatched).record(status, elapsed / 1000);
    tracing?.finish(ex);
    if (status !== 101 || upstream === undefined || (!accessLog.enabled && tracing === null)) return undefined;
    return watchConnection(accessLog, ex, socket, upstream, tracing);
  };
  ex.upgradeDone = end;
  socket.once('close', () => end(ex.status || 499));
  if (tracing === null) serveUpgrade(logger, ex, socket, head, port, snapshot);
  else tracing.serve(ex, () => serveUpgrade(logger, ex, socket, head, port, snapshot));
}

/** An upgraded connection, from the 101 until it closes: its `upgrade closed` log line and span (ADR 0055). */
function watchConnection(accessLog: AccessLog, ex: ExchangeImpl, socket: Duplex, upstream: Duplex, tracing: Tracing | null): UpgradeTap {
  const upgrade = ex.headers.upgrade;
  // The client's word, accepted by the upstream's 101; bounded, as it lands on every line and span.
  const protocol = typeof upgrade === 'string' ? upgrade.slice(0, 64).toLowerCase() : 'unknown';
  const span = tracing?.startConnection(ex, protocol);
  return watchUpgradedConnection(socket, upstream, protocol === 'websocket', (closed) => {
    const fields = endFields(closed, protocol);
    if (span !== undefined) tracing!.endConnection(span, fields, closed.closeCode);
    accessLog.recordUpgradeEnd(ex, closed.durationMs, fields, span?.spanContext().spanId);
  });
}

/** Route selection and the request chain of an upgrade, then the backend's upgrade (or a refusal). */
function serveUpgrade(logger: Logger, ex: ExchangeImpl, socket: Duplex, head: Buffer, port: number, snapshot: Snapshot): void {
  const refuse = (reply: Reply): void => {
    ex.upgradeDone!(reply.status);
    writeRawResponse(socket, reply.status, reply.headers, (reply.body as string | Uint8Array | null) ?? '');
  };
  if (ex.refusal !== undefined) {
    refuse(errorReply(refused(ex.refusal), logger, ex));
    return;
  }
  const listener = requestListener(snapshot.binds.get(port), ex);
  if (listener instanceof GatewayError) return refuse(errorReply(listener, logger, ex));
  const route = listener ? selectRoute(listener, ex) : undefined;
  if (!route) {
    refuse(errorReply(noRoute(listener ? 'route' : 'listener', ex), logger, ex));
    return;
  }
  ex.route = route.info;
  ex.compiledRoute = route;
  // Only the protocols enabled are relayed (ADR 0118, as Envoy's upgrade types): after a 101 every byte goes to
  // the upstream past routes and policies, so a plain HTTP backend that switches to anything asked would be a
  // tunnel to any of its paths.
  if (!upgradeAllowed(ex.headers.upgrade as string | undefined, snapshot.staticConfig.upgradeProtocols)) {
    refuse(jsonErrorReply(403, 'upgrade_not_allowed', 'this upgrade protocol is not enabled (`config.upgradeProtocols`)'));
    return;
  }
  const run = async (): Promise<void> => {
    if (route.requestHooks) {
      const early = await runRequestHooks(route.requestHooks, ex);
      if (early) {
        // Awaited: a third-party hook's promise may reject (`UnwritableReply`, ADR 0155), answered as a failure.
        for (const h of route.responseHooks ?? []) await h.onResponse!(ex, early);
        return refuse(early);
      }
    }
    const ref = pickBackend(route, null);
    if (!ref?.instance.upgrade) {
      return refuse(jsonErrorReply(501, 'upgrade_not_supported', 'this route does not accept protocol upgrades'));
    }
    ex.plan = ref.plan;
    if (ref.requestHooks) {
      const early = await runRequestHooks(ref.requestHooks, ex);
      if (early) return refuse(early);
    }
    ex.status = 101; // what a backend that does not tell its outcome is logged with
    sentBefore = bytesSent(socket);
    // Typed void: a plugin's async one is awaited, so that its rejection is answered, not left unhandled (ADR 0155).
    const done: unknown = ref.instance.upgrade(ex, socket, head);
    if (isPromiseLike(done)) await done;
  };
  // The socket's bytes sent when the backend was given it; -1 before.
  let sentBefore = -1;
  run().catch((err: unknown) => {
    if (sentBefore === -1 || (bytesSent(socket) === sentBefore && !socket.writableEnded)) {
      return refuse(errorReply(err, logger, ex));
    }
    // The backend had answered (its 101, or the forwarder's answer) or ended the socket: an HTTP answer now would be
    // read as the new protocol's bytes (ADR 0166). The failure is logged naming the plugin; the connection closes.
    errorReply(err, logger, ex);
    socket.destroy();
  });
}

/** Bytes written to an upgrade's socket so far, those still buffered included (node:net counts them). */
function bytesSent(socket: Duplex): number {
  return (socket as Duplex & { bytesWritten?: number }).bytesWritten ?? socket.writableLength;
}
