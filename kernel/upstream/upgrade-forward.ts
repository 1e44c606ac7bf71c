import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';
import type { Duplex } from 'node:stream';
import { BodyTooLargeError, GatewayError, presentHeaders, readCapped } from '../sdk/index.ts';
import type { Exchange, UpgradeRelay, UpstreamAttempt } from '../sdk/index.ts';
import { DetachedState, exchangeState } from '../exchange/kernel-exchange.ts';
import type { ExchangeState, UpgradeTap } from '../exchange/kernel-exchange.ts';
import { stripHopByHop } from './hop-by-hop.ts';
import { tlsConnectOptions } from './tls-options.ts';
import { InvalidStatusError, isHttpStatus, upstreamFailure } from './upstream-errors.ts';
import { writeRawResponse } from './raw-response.ts';
import { switchMatches } from './upgrade-protocols.ts';
import type { PooledTarget } from './pooled-target.ts';
import { PluginHookError } from '../compile/plugin-owner.ts';
import { runUpstreamHook } from '../compile/run-hooks.ts';

// Not `import ... from 'node:http'`: an ES import builds http's namespace, which reads its lazy WebSocket getters and so
// loads Node's bundled undici (about 13 MiB and 25 ms at start, docs/perf.md "Startup").
const { request: httpRequest } = process.getBuiltinModule('node:http');
/** A relay's `early` when the client sent nothing before the switch. */
const NO_EARLY: readonly Buffer[] = Object.freeze([]);

/** Why an upgrade's CLIENT span ended without an answer: the client left during the handshake. */
const CLIENT_GONE = { code: 'client_closed', message: 'the client left during the upgrade handshake' };

/** How long a client the gateway closed a connection on (ADR 0190) has to close its side before it is cut off. */
const GATEWAY_CLOSE_GRACE_MS = 5000;

/** Bytes a client may send before the upstream accepted its upgrade. */
const EARLY_UPGRADE_DATA_LIMIT = 64 * 1024;

/**
 * Bytes of an upstream's answer declining an upgrade that are read and relayed: an error page or a JSON error, never
 * a download. A longer answer is a 502 (docs/security.md "Bounded reads of what a peer sends").
 */
export const DECLINED_UPGRADE_BODY_LIMIT = 1024 * 1024;

/** `UpstreamTarget.upgrade`: the client's upgrade request (WebSocket and the like) relayed over its own connection. */
export function forwardUpgrade(target: PooledTarget, ex: Exchange, socket: Duplex, head: Buffer, onAttempt?: (attempt: UpstreamAttempt) => void | Promise<void>, relay?: UpgradeRelay): void {
  const state = exchangeState(ex) ?? new DetachedState(ex);
  const hooks = state.plan.upstreamHooks;
  if (!hooks && !onAttempt) return sendUpgrade(target, ex, socket, head, upgradeHeaders(target, ex, state), ex.path + ex.query, relay);
  // Per-attempt hooks (backendAuth), then the backend's own `onAttempt`, sign the upgrade request as they sign any
  // other request. A client that leaves while they run (a token fetch) is noticed by sendUpgrade.
  const headers = upgradeHeaders(target, ex, state);
  const view: UpstreamAttempt = { method: ex.method, path: ex.path + ex.query, origin: target.origin, headers: headers as IncomingHttpHeaders, body: undefined, attempt: 0 };
  void (async () => {
    for (const hook of hooks ?? []) await runUpstreamHook(hook, ex, view);
    await onAttempt?.(view);
  })().then(
    () => sendUpgrade(target, ex, socket, head, headers, view.path, relay),
    (err: unknown) => {
      // A hook that never settled (ADR 0144) answers its 504; any other failure of the hooks is the upstream's.
      const cause = err instanceof PluginHookError ? err.cause : err;
      const failure = cause instanceof GatewayError ? cause : upstreamFailure(err, target.origin);
      state.upgradeDone?.(failure.status);
      writeRawResponse(socket, failure.status, { 'content-type': 'application/json' }, JSON.stringify({ error: { type: failure.type, message: failure.message } }));
    },
  );
}

/** The upgrade request's headers: hop-by-hop removed (Upgrade/Connection kept), Host chosen, X-Forwarded-* added. */
function upgradeHeaders(target: PooledTarget, ex: Exchange, state: ExchangeState): OutgoingHttpHeaders {
  // Without undefined values (withheld credentials are blanked): node:http refuses them.
  const headers: OutgoingHttpHeaders = presentHeaders(ex.headers);
  stripHopByHop(headers as IncomingHttpHeaders, true);
  const explicitAuthority = ex.authority !== state.clientAuthority;
  headers.host = explicitAuthority || !target.useTargetAuthority ? ex.authority : target.parsed.authority;
  const xff = ex.headers['x-forwarded-for'];
  headers['x-forwarded-for'] = xff ? `${Array.isArray(xff) ? xff.join(', ') : xff}, ${state.peerAddress}` : state.peerAddress;
  headers['x-forwarded-proto'] = ex.scheme;
  headers['x-forwarded-host'] = state.clientAuthority || undefined;
  headers['x-request-id'] = ex.requestId;
  return headers;
}

/** `path` is the one the hooks left (a query key); the span records the client's. */
function sendUpgrade(target: PooledTarget, ex: Exchange, socket: Duplex, head: Buffer, headers: OutgoingHttpHeaders, path: string, relay: UpgradeRelay | undefined): void {
  const state = exchangeState(ex);
  const done = state?.upgradeDone;
  if (socket.destroyed) return void done?.(499);
  const parsed = target.parsed;
  // When tracing: a CLIENT span for the upstream handshake (its traceparent goes upstream), ended with its outcome.
  const tracing = target.traces?.tracing ?? null;
  const span = tracing === null ? undefined : tracing.attempt(ex.method, parsed, ex.path + ex.query, headers as Record<string, unknown>, undefined, state);
  let settled = false;
  const settle = (status: number | undefined, err?: unknown, upstream?: Duplex): UpgradeTap | undefined => {
    if (settled) return undefined;
    settled = true;
    if (span !== undefined) tracing!.endClient(span, status, err);
    return done?.(status ?? 499, upstream);
  };
  // node:https (and node:tls) only for a TLS upstream: a cleartext config never loads them.
  const send = parsed.secure ? process.getBuiltinModule('node:https').request : httpRequest;
  const upReq = send({
    host: parsed.host,
    port: parsed.port,
    method: ex.method,
    path,
    headers,
    ...(parsed.secure ? tlsConnectOptions(target.options.tls, parsed.host) : {}),
  });
  socket.on('error', () => upReq.destroy());
  // The route's answer deadline (ADR 0019) covers the handshake too: an upstream that never answers an upgrade
  // would hold the client and an upstream connection for ever (ADR 0092). A timer per upgrade: they are rare.
  const deadlineMs = state?.plan.headersTimeoutMs ?? 0;
  const deadline = deadlineMs > 0 ? setTimeout(() => upReq.destroy(Object.assign(new Error('no answer to the upgrade'), { code: 'UND_ERR_HEADERS_TIMEOUT' })), deadlineMs) : undefined;
  upReq.once('close', () => clearTimeout(deadline));
  // Until the upstream answers, read the client socket ourselves: an unread socket never reports the client
  // leaving (bind servers allow half-open sockets), so the upstream connection would be kept forever. Bytes sent
  // early are kept (bounded) and replayed after the handshake.
  let early: Buffer[] | undefined;
  let earlySize = 0;
  const onClientGone = (): void => {
    settle(undefined, CLIENT_GONE);
    upReq.destroy();
    socket.destroy();
  };
  const onEarlyData = (chunk: Buffer): void => {
    earlySize += chunk.length;
    if (earlySize > EARLY_UPGRADE_DATA_LIMIT) onClientGone();
    else (early ??= []).push(chunk);
  };
  socket.on('data', onEarlyData);
  socket.once('end', onClientGone);
  socket.once('close', onClientGone);
  // A 101 that does not switch to the protocol the client asked for: 502, the upstream connection closed.
  const wrongSwitch = (answered: string | undefined, upSocket: Duplex): void => {
    upSocket.destroy();
    const switched = answered === undefined ? 'without naming a protocol' : `to ${JSON.stringify(answered.slice(0, 64))}`;
    // The client's answer does not name the upstream's address (ADR 0117); the span does, for operators.
    const message = `upstream answered 101 switching ${switched}, not to the protocol the client asked for`;
    if (span !== undefined) tracing!.endClient(span, 101, new Error(`${message} (${target.origin})`));
    settled = true;
    done?.(502);
    writeRawResponse(socket, 502, { 'content-type': 'application/json' }, JSON.stringify({ error: { type: 'bad_gateway', message } }));
  };
  upReq.on('upgrade', (upRes, upSocket, upHead) => {
    clearTimeout(deadline);
    socket.off('data', onEarlyData);
    socket.off('end', onClientGone);
    socket.off('close', onClientGone);
    if (socket.destroyed) {
      settle(undefined, CLIENT_GONE);
      return void upSocket.destroy();
    }
    // RFC 9110 section 7.8: the 101 names the protocol switched to, one the client asked for. Relayed otherwise, the
    // client would take the upstream's bytes for a protocol it never asked for (and an upstream that switches to
    // anything would get every later byte, past the routes): 502, both connections closed, nothing relayed.
    if (!switchMatches(ex.headers.upgrade as string | undefined, upRes.headers.upgrade)) return wrongSwitch(upRes.headers.upgrade, upSocket);
    // The pipeline watches the connection from here (its log line and span); it sees the pipes' chunks itself.
    const tap = settle(upRes.statusCode ?? 101, undefined, upSocket);
    let lines = `HTTP/1.1 ${upRes.statusCode ?? 101} ${upRes.statusMessage ?? 'Switching Protocols'}\r\n`;
    for (let i = 0; i < upRes.rawHeaders.length; i += 2) lines += `${upRes.rawHeaders[i]}: ${upRes.rawHeaders[i + 1]}\r\n`;
    socket.write(`${lines}\r\n`);
    // A backend's reader of the upstream's bytes (ADR 0190): they reach the client through it, the head included.
    let closing = false;
    const down = relay?.((cause) => {
      if (closing) return;
      closing = true;
      tap?.closedByGateway(cause);
      socket.unpipe(upSocket);
      upSocket.destroy();
      // What the client still sends is read and dropped, so its closing is seen; one that never closes is cut off.
      socket.resume();
      setTimeout(() => socket.destroy(), GATEWAY_CLOSE_GRACE_MS).unref();
    }, early ?? NO_EARLY);
    if (upHead.length) {
      if (down) down.write(upHead);
      else socket.write(upHead);
      tap?.fromUpstream(upHead);
    }
    if (head.length) {
      upSocket.write(head);
      tap?.fromClient(head);
    }
    if (early) for (const chunk of early) {
      upSocket.write(chunk);
      tap?.fromClient(chunk);
    }
    upSocket.on('error', () => socket.destroy());
    socket.on('close', () => upSocket.destroy());
    upSocket.on('close', () => {
      if (!closing) socket.destroy();
    });
    // The route's stream idle timeout (default `config.defaultTimeouts.streamIdleTimeout`, 5 min; Envoy's covers
    // upgraded streams too): a connection with no byte either way for that long is closed on both sides, or idle
    // tunnels would hold a client and an upstream socket for ever. The client socket sees both directions (it reads
    // what goes up, writes what comes down) and node re-arms its timeout on each read and write: no timer per chunk.
    const idleMs = state?.plan.idleTimeoutMs ?? 0;
    const timed = socket as Duplex & { setTimeout?(ms: number, callback: () => void): unknown };
    if (idleMs > 0 && typeof timed.setTimeout === 'function') {
      timed.setTimeout(idleMs, () => {
        tap?.closedByGateway('idle_timeout');
        upSocket.destroy();
        socket.destroy();
      });
    }
    if (down) {
      down.on('error', () => {
        upSocket.destroy();
        socket.destroy();
      });
      upSocket.pipe(down).pipe(socket);
    } else upSocket.pipe(socket);
    socket.pipe(upSocket);
  });
  upReq.on('response', (upRes) => {
    clearTimeout(deadline);
    // A 101 node does not take for an upgrade (no Upgrade header): the upstream switched to something unnamed. Its
    // connection must not go back to the agent's pool for the next request.
    if (upRes.statusCode === 101) return wrongSwitch(undefined, upRes.socket);
    // The upstream declined the upgrade: relay its answer as is, read whole (it is written with a length) and capped.
    // The log and metrics take the status once the client's answer is known: the upstream's, or 502 past the cap.
    const status = upRes.statusCode ?? 502;
    if (!isHttpStatus(status)) {
      // Not an answer a client can read (RFC 9110 section 15): 502, as on every other path.
      const failure = upstreamFailure(new InvalidStatusError(status), target.origin);
      upRes.destroy();
      settle(failure.status, failure);
      return writeRawResponse(socket, failure.status, { 'content-type': 'application/json' }, JSON.stringify({ error: { type: failure.type, message: failure.message } }));
    }
    const responseHeaders = { ...upRes.headers };
    stripHopByHop(responseHeaders);
    readCapped(upRes, DECLINED_UPGRADE_BODY_LIMIT).then(
      (body) => {
        settle(status);
        writeRawResponse(socket, status, responseHeaders, body);
      },
      (err: unknown) => {
        if (!(err instanceof BodyTooLargeError)) {
          settle(status, err);
          return void socket.destroy();
        }
        const message = 'upstream declined the upgrade with a body larger than 1 MiB, the limit for that answer';
        settle(502, err);
        writeRawResponse(socket, 502, { 'content-type': 'application/json' }, JSON.stringify({ error: { type: 'bad_gateway', message } }));
      },
    );
  });
  upReq.on('error', (err) => {
    const failure = upstreamFailure(err, target.origin, deadlineMs);
    if (!settled) {
      // The CLIENT span takes the network error; the client gets the gateway's status.
      if (span !== undefined) tracing!.endClient(span, undefined, err);
      settled = true;
      done?.(failure.status);
    }
    writeRawResponse(socket, failure.status, { 'content-type': 'application/json' }, JSON.stringify({ error: { type: failure.type, message: failure.message } }));
  });
  upReq.end();
}
