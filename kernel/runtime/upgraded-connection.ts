import type { Duplex } from 'node:stream';
import type { UpgradeTap } from '../exchange/kernel-exchange.ts';
import { WsCloseScanner } from './ws-close-scanner.ts';

/** How an upgraded (WebSocket) connection ended: the access log's `upgrade closed` line and the connection's span (ADR 0055). */
export interface UpgradedConnectionEnd {
  /** From the upstream's 101 to the connection closing. */
  readonly durationMs: number;
  /** Bytes relayed after the handshake: from the client, and to it. */
  readonly bytesReceived: number;
  readonly bytesSent: number;
  /**
   * Which side closed first: sent the first Close frame, else ended its TCP connection first; `gateway` when the
   * gateway closed both (`closeCause` says why).
   */
  readonly closedBy: 'client' | 'upstream' | 'gateway';
  /** Why the gateway closed the connection (`idle_timeout`); undefined when the peers closed it. */
  readonly closeCause?: string | undefined;
  /**
   * WebSocket only: the first Close frame's status code (1005 when it carried none) or 1006 when neither side sent
   * one (RFC 6455 §7.1.5: closed abnormally); undefined for other upgrades.
   */
  readonly closeCode: number | undefined;
  readonly closeReason: string | undefined;
}

/** The fields of the `upgrade closed` log line and of the connection's span. */
export function endFields(end: UpgradedConnectionEnd, protocol: string): Record<string, string | number> {
  const fields: Record<string, string | number> = {
    'upgrade.protocol': protocol,
    'upgrade.bytes.received': end.bytesReceived,
    'upgrade.bytes.sent': end.bytesSent,
    'upgrade.closed_by': end.closedBy,
  };
  if (end.closeCause !== undefined) fields['upgrade.close_cause'] = end.closeCause;
  if (end.closeCode !== undefined) fields['websocket.close.code'] = end.closeCode;
  if (end.closeReason) fields['websocket.close.reason'] = end.closeReason;
  return fields;
}

/**
 * Watch an upgraded connection the forwarder relays between `client` and `upstream` until it closes, then call
 * `onEnd` once. Each side's bytes are counted from its `data` events (the pipes read the same chunks); bytes the
 * forwarder relays itself (the handshake's leftovers) come in through the returned tap. Only WebSocket connections
 * are scanned for Close frames.
 */
export function watchUpgradedConnection(client: Duplex, upstream: Duplex, websocket: boolean, onEnd: (end: UpgradedConnectionEnd) => void): UpgradeTap {
  const started = performance.now();
  let received = 0;
  let sent = 0;
  const fromClient = websocket ? new WsCloseScanner() : undefined;
  const fromUpstream = websocket ? new WsCloseScanner() : undefined;
  let firstClose: 'client' | 'upstream' | undefined;
  let firstEnd: 'client' | 'upstream' | undefined;
  let gatewayCause: string | undefined;
  let gatewayFirst = false;
  const tap: UpgradeTap = {
    fromClient(chunk: Buffer): void {
      received += chunk.length;
      if (fromClient !== undefined && !fromClient.done) {
        fromClient.push(chunk);
        if (fromClient.code !== undefined) firstClose ??= 'client';
      }
    },
    fromUpstream(chunk: Buffer): void {
      sent += chunk.length;
      if (fromUpstream !== undefined && !fromUpstream.done) {
        fromUpstream.push(chunk);
        if (fromUpstream.code !== undefined) firstClose ??= 'upstream';
      }
    },
    closedByGateway(cause: string): void {
      // Before any peer's Close frame: the gateway began closing (the peers' frames after it answer its own).
      if (gatewayCause === undefined && firstClose === undefined) gatewayFirst = true;
      gatewayCause ??= cause;
    },
  };
  client.on('data', tap.fromClient);
  upstream.on('data', tap.fromUpstream);
  const clientEnded = (): void => void (firstEnd ??= 'client');
  const upstreamEnded = (): void => void (firstEnd ??= 'upstream');
  client.once('end', clientEnded);
  upstream.once('end', upstreamEnded);
  upstream.once('close', upstreamEnded);
  // The forwarder destroys each socket when the other closes: the client's close is the connection's end.
  client.once('close', () => {
    clientEnded();
    const closedBy = firstClose ?? firstEnd ?? 'client';
    const scanner = closedBy === 'client' ? fromClient : fromUpstream;
    onEnd({
      durationMs: performance.now() - started,
      bytesReceived: received,
      bytesSent: sent,
      // A peer's Close frame sent before the gateway gave up still says who began closing; one sent after the gateway
      // closed (a client answering a relay's Close, ADR 0190) does not, though its code is the one logged.
      closedBy: gatewayFirst ? 'gateway' : closedBy,
      closeCause: gatewayCause,
      closeCode: websocket ? (firstClose === undefined ? 1006 : scanner!.code) : undefined,
      closeReason: firstClose === undefined ? undefined : scanner!.reason,
    });
  });
  return tap;
}
