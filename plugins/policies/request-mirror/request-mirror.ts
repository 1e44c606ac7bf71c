import { isIP } from 'node:net';
import { discardBody } from 'switchyard/sdk';
import type { CompileContext, HeaderMap, PolicyInstance } from 'switchyard/sdk';

export interface MirrorConfig {
  backend: Record<string, unknown>;
  percentage?: number;
}

/**
 * Bodies up to this size are copied to the mirror, sized or chunked; a request with a longer body is not mirrored (a
 * copy without its body would be another request). ADR 0148.
 */
const MIRROR_BODY_LIMIT = 1024 * 1024;
const MIRROR_TIMEOUT_MS = 30_000;
/**
 * Copies one policy keeps in flight at most, and the bytes of their bodies: a slow or silent mirror would otherwise
 * hold a socket and a body per request for MIRROR_TIMEOUT_MS (30,000 sockets at 1,000 requests a second). Past
 * either, a request is not mirrored (counted as dropped); the primary is never held back.
 */
const MIRRORS_IN_FLIGHT = 256;
const MIRROR_BYTES_IN_FLIGHT = 32 * 1024 * 1024;
/** Not copied: the connection's own headers, and `expect` (answered by the gateway; the HTTP client refuses it). */
const NOT_COPIED = new Set(['host', 'connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'te', 'trailer', 'upgrade', 'content-length', 'expect']);

/** Compile one `requestMirror` policy: its backend must forward HTTP; copies are sent and their answers discarded. */
export async function compileRequestMirror(config: MirrorConfig, ctx: CompileContext): Promise<PolicyInstance> {
  const instance = await ctx.compileBackend(config.backend, ['backend']);
  const target = instance.target;
  if (!target) return ctx.fail('`requestMirror` needs a backend that forwards HTTP (`host`, or `backend` naming one)', ['backend']);
  // The copy's Host follows the rule of a forward to the mirror (ADR 0185): an IP-literal mirror keeps the request's
  // authority, as its primary does (a shadow of the same virtual host answers it); a named one gets its own name
  // unless a policy rewrote the authority. Envoy's shadow keeps the Host too.
  const keepsAuthority = isIP(new URL(target.origin).hostname.replace(/^\[|\]$/g, '')) !== 0;
  const share = config.percentage ?? 1;
  const log = ctx.logger;
  const dropped = ctx.counter('switchyard_request_mirror_dropped_total', `Requests not mirrored because the policy's copies in flight were at their limit (${MIRRORS_IN_FLIGHT} copies or ${MIRROR_BYTES_IN_FLIGHT / 1024 / 1024} MiB of bodies).`).child({});
  let inFlight = 0;
  let bytesInFlight = 0;
  return {
    onRequest(ex) {
      if (share <= 0 || (share < 1 && Math.random() >= share)) return;
      if (inFlight >= MIRRORS_IN_FLIGHT) {
        dropped.inc();
        return;
      }
      // The copy is of the request as it is now: later policies may still change it.
      const method = ex.method;
      const path = ex.path + ex.query;
      const headers: HeaderMap = {};
      for (const [name, value] of Object.entries(ex.headers)) if (value !== undefined && !NOT_COPIED.has(name)) headers[name] = value;
      const clientHost = Array.isArray(ex.headers.host) ? ex.headers.host[0] : ex.headers.host;
      if (ex.authority !== '' && (keepsAuthority || ex.authority !== clientHost)) headers.host = ex.authority;
      inFlight++;
      let held = 0;
      let refused = false;
      // The body's bytes count against the policy's bound as they are copied; past it, this copy is given up.
      const take = (bytes: number): boolean => {
        if (bytesInFlight + bytes > MIRROR_BYTES_IN_FLIGHT) {
          refused = true;
          return false;
        }
        bytesInFlight += bytes;
        held += bytes;
        return true;
      };
      const done = (): void => {
        inFlight--;
        bytesInFlight -= held;
        held = 0;
      };
      // Taken as the body streams to the primary, which never waits for it (ADR 0148).
      void ex.copyBody(MIRROR_BODY_LIMIT, take).then((body) => {
        if (body === undefined) {
          done();
          if (refused) dropped.inc();
          return;
        }
        let sent: ReturnType<typeof target.request>;
        try {
          sent = target.request({ method, path, headers, body: body.length > 0 ? body : null, timeoutMs: MIRROR_TIMEOUT_MS });
        } catch (err) {
          done();
          return log.debug('mirror request failed', { target: target.origin, error: err as Error });
        }
        sent.then(
          (res) => {
            res.body.on('close', done);
            // An answer nobody reads: a mirror service's endless one is cut, not read for the whole deadline.
            discardBody(res.body);
          },
          (err: unknown) => {
            done();
            log.debug('mirror request failed', { target: target.origin, error: err as Error });
          },
        );
      });
    },
  };
}
