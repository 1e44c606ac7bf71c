import type { ServerHttp2Session } from 'node:http2';

/**
 * Keep-alive PINGs of an HTTP/2 client connection (`frontendPolicies.http.http2KeepaliveInterval`, ADR 0158): every
 * `intervalMs` while `busy()` (streams open), a PING; one not acknowledged within `timeoutMs` closes the connection,
 * which resets its streams and releases their upstream requests. A connection without streams has the idle close
 * instead (h2-sessions.ts): PINGs there would keep it open for ever.
 */
export function keepAlive(session: ServerHttp2Session, intervalMs: number, timeoutMs: number, busy: () => boolean): void {
  let waiting: NodeJS.Timeout | undefined;
  const acked = (): void => {
    clearTimeout(waiting);
    waiting = undefined;
  };
  const timer = setInterval(() => {
    if (waiting !== undefined || session.destroyed || !busy()) return;
    waiting = setTimeout(() => session.destroy(), timeoutMs).unref();
    // Not sent (false) past node:http2's bound on PINGs in flight (10): the deadline above stands for those.
    session.ping(acked);
  }, intervalMs).unref();
  session.once('close', () => {
    clearInterval(timer);
    clearTimeout(waiting);
  });
}
