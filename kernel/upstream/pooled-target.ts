import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Dispatcher } from 'undici';
import type { Span } from '@opentelemetry/api';
import type { GatewayError } from '../sdk/index.ts';
import type { Exchange, ForwardOptions, Reply, UpstreamAttempt, UpstreamCallOptions, UpstreamResponse, UpstreamTarget, UpstreamTargetOptions, UpgradeRelay } from '../sdk/index.ts';
import { DetachedState, exchangeState } from '../exchange/kernel-exchange.ts';
import type { ExchangeState } from '../exchange/kernel-exchange.ts';
import { RETRY_BUFFER_LIMIT } from '../exchange/upstream-plan.ts';
import type { UpstreamPlan } from '../exchange/upstream-plan.ts';
import type { BackendMetrics, UpstreamMetrics } from '../telemetry/upstream-metrics.ts';
import type { TracingHolder } from '../telemetry/tracing.ts';
import { blankHopByHop } from './hop-by-hop.ts';
import { isIpLiteral } from './tls-options.ts';
import { connectErrorCode, upstreamFailure } from './upstream-errors.ts';
import type { LazyPool, Pool } from './undici-core.ts';
import { parseOrigin } from './origin.ts';
import type { Origin } from './origin.ts';
import { hasRequestBody, readsFirst, streamTaken } from './request-body.ts';
import { DrainedBody, readWhole } from '../exchange/body-read.ts';
import { DirectForward } from './direct-forward.ts';
import type { H1Handler } from './h1-connection.ts';
import type { H1Pool } from './h1-pool.ts';
import type { DirectOrigin, DirectReplies } from './direct-forward.ts';
import { forwardAttempts, forwardOnce, STREAM_RAW } from './forward-reply.ts';
import { upstreamCall } from './upstream-call.ts';
import { forwardUpgrade } from './upgrade-forward.ts';
import { kWantsTrailers, takesTrailers } from './trailers.ts';

type TrailersWanted = { [kWantsTrailers]?: boolean };

/** A target that can forward a request straight into the client's response (ADR 0051). */
export interface DirectForwarder {
  /**
   * The plain forward (one attempt, no per-attempt hooks, no timer of its own, no tracing) with the upstream's answer
   * written straight into `res` through `replies`. False, having done nothing, when this exchange needs more (the
   * caller then uses `forward`).
   */
  forwardInto<E extends Exchange>(ex: E, res: ServerResponse, replies: DirectReplies<E>): boolean;
}

/** The target of a backend as a DirectForwarder, when the kernel made it; else null. */
export function directForwarder(target: UpstreamTarget | undefined): DirectForwarder | null {
  return target instanceof PooledTarget ? target : null;
}

/**
 * A reverse-proxy target over one reused undici pool. Three ways out: `forward` (a `Reply`, forward-reply.ts),
 * `forwardInto` (straight into the client's response, direct-forward.ts), `request` (a plugin's own call,
 * upstream-call.ts); and `upgrade` (upgrade-forward.ts). Its fields are read by those files, not by plugins.
 */
export class PooledTarget implements UpstreamTarget, DirectForwarder, DirectOrigin {
  readonly origin: string;
  readonly parsed: Origin;
  /** undici's pool of the origin, made on first use (ADR 0079). */
  private readonly undici: LazyPool;
  readonly useTargetAuthority: boolean;
  readonly options: UpstreamTargetOptions;
  readonly metrics: BackendMetrics | undefined;
  readonly traces: TracingHolder | undefined;
  /** The lean client's pool (cleartext HTTP/1.1 origins, ADR 0073): the direct forward's; null: undici's pool. */
  readonly h1: H1Pool | null;

  constructor(options: UpstreamTargetOptions, pool: LazyPool, metrics: UpstreamMetrics | undefined, traces?: TracingHolder, h1: H1Pool | null = null) {
    this.options = options;
    this.h1 = h1;
    this.traces = traces;
    this.parsed = parseOrigin(options.origin);
    this.origin = this.parsed.href;
    this.undici = pool;
    this.metrics = metrics?.forBackend(this.origin);
    this.useTargetAuthority = (options.authority ?? (isIpLiteral(this.parsed.host) ? 'request' : 'target')) === 'target';
  }

  /** undici's pool of the origin (TLS, h2, CONNECT, `forward`, plugin-made calls): made, and undici loaded, by the first use. */
  get pool(): Pool {
    return this.undici.get();
  }

  /** Headers for the upstream: hop-by-hop removed, Host chosen, X-Forwarded-* added. Mutates ex.headers. */
  prepareHeaders(ex: Exchange, state: ExchangeState): IncomingHttpHeaders {
    const h = ex.headers;
    blankHopByHop(h);
    const explicitAuthority = ex.authority !== state.clientAuthority;
    h.host = explicitAuthority || !this.useTargetAuthority ? ex.authority || this.parsed.authority : this.parsed.authority;
    const xff = h['x-forwarded-for'];
    h['x-forwarded-for'] = xff ? `${Array.isArray(xff) ? xff.join(', ') : xff}, ${state.peerAddress}` : state.peerAddress;
    h['x-forwarded-proto'] = ex.scheme;
    // An HTTP/1.0 request may have no Host: then none is forwarded (and the client's own is not kept).
    h['x-forwarded-host'] = state.clientAuthority || undefined;
    h['x-request-id'] = ex.requestId;
    // node:http already answered `Expect: 100-continue` to the client; undici refuses to send the header.
    if (h.expect !== undefined) h.expect = undefined;
    // An HTTP/2 client's `te: trailers` (gRPC): Envoy forwards that one TE value (ADR 0141).
    // Read through the request's state: a detached view has no client request (its `req` throws).
    if ((state.res as { req?: TrailersWanted } | undefined)?.req?.[kWantsTrailers] === true) h.te = 'trailers';
    return h;
  }

  forward(ex: Exchange, onAttempt?: (attempt: UpstreamAttempt) => void | Promise<void>, options?: ForwardOptions): Promise<Reply> {
    // The request's own state (shared by its views); an exchange a plugin made itself gets a fresh one.
    const state = exchangeState(ex) ?? new DetachedState(ex);
    const plan = state.plan;
    // An HTTP/2 client's answer streams through the raw-header handler, which keeps the upstream's trailers (undici's
    // `request()` drops an h2 upstream's) for the reply writer to relay (ADR 0141). Asked of the request's state: a
    // plugin's exchange may have no `req`, and a detached view's throws.
    const whole = options === undefined ? (state.res !== undefined && takesTrailers(state.res) ? STREAM_RAW : 0) : (options.readWhole ?? (options.rawHeaders === true ? STREAM_RAW : 0));
    if (plan.retry === null && plan.upstreamHooks === null && onAttempt === undefined && state.attempts === 0 && (this.traces?.tracing ?? null) === null) {
      try {
        return forwardOnce(this, ex, state, plan, whole);
      } catch (err) {
        return Promise.reject(err); // as the async path does: callers get a rejection, never a throw
      }
    }
    return forwardAttempts(this, ex, state, plan, onAttempt, whole);
  }

  forwardInto<E extends Exchange>(ex: E, res: ServerResponse, replies: DirectReplies<E>): boolean {
    const state = exchangeState(ex);
    if (state?.readBodyOnSocket === undefined || state.attempts !== 0) return false;
    const plan = state.plan;
    if (plan.retry !== null || plan.upstreamHooks !== null || plan.attemptTimeoutMs > 0) return false;
    // Before prepareHeaders: stripping Transfer-Encoding would hide a chunked request body.
    const hasBody = hasRequestBody(ex);
    const headers = this.prepareHeaders(ex, state);
    const handler = new DirectForward(ex, state, res, replies, this, headers);
    // requestBody's choice, with the read handing the body to the handler instead of a promise.
    if (ex.body) handler.send(ex.body);
    else if (!hasBody) handler.send(null);
    else if (readsFirst(headers)) state.readBodyOnSocket(RETRY_BUFFER_LIMIT, handler);
    // A lean request (ADR 0088 addendum) has no stream to send, only its body read whole (at most 64 KiB).
    else if (readWhole(ex.req)) state.readBodyOnSocket(Infinity, handler);
    // A body a policy took from `ex.req` itself is not sent cut (ADR 0155); a smaller one's read finds it too.
    else if (streamTaken(ex.req)) handler.bodyFailed(new DrainedBody());
    else handler.send(ex.req);
    return true;
  }

  dispatchDirect(ex: Exchange, plan: UpstreamPlan, headers: IncomingHttpHeaders, body: Buffer | IncomingMessage | null, handler: Dispatcher.DispatchHandler & H1Handler): void {
    if (this.h1 !== null && ex.method !== 'CONNECT') {
      // The same deadlines (ADR 0019), checked by the lean pool's sweep.
      return this.h1.dispatch({ path: ex.path + ex.query, method: ex.method, headers, body, headersTimeout: plan.headersTimeoutMs, bodyTimeout: plan.idleTimeoutMs }, handler);
    }
    // Default deadlines (ADR 0019) ride on undici's own parser timers, as in `send`.
    this.pool.dispatch(
      { path: ex.path + ex.query, method: ex.method as Dispatcher.HttpMethod, headers, body, headersTimeout: plan.headersTimeoutMs, bodyTimeout: plan.idleTimeoutMs },
      handler,
    );
  }

  /** Traced requests keep the direct path (ADR 0055): the attempt's CLIENT span, as `forwardAttempts` makes it. */
  attemptSpan(ex: Exchange, headers: IncomingHttpHeaders): Span | undefined {
    const tracing = this.traces?.tracing ?? null;
    return tracing === null ? undefined : tracing.attempt(ex.method, this.parsed, ex.path + ex.query, headers as Record<string, unknown>, undefined, exchangeState(ex));
  }

  answered(sentAt: number, status?: number, span?: Span): void {
    this.metrics?.duration.observe((performance.now() - sentAt) / 1000);
    if (span !== undefined) this.traces?.tracing?.endClient(span, status);
  }

  /** Metrics of a failed attempt; the error as the GatewayError the client sees. */
  attemptFailed(err: unknown, sentAt: number, plan: UpstreamPlan, span?: Span): GatewayError {
    if (span !== undefined) this.traces?.tracing?.endClient(span, undefined, err);
    if (this.metrics) {
      this.metrics.duration.observe((performance.now() - sentAt) / 1000);
      const code = connectErrorCode(err);
      if (code) this.metrics.connectError(code);
    }
    return upstreamFailure(err, this.origin, plan.headersTimeoutMs);
  }

  request(options: UpstreamCallOptions): Promise<UpstreamResponse> {
    return upstreamCall(this, options);
  }

  upgrade(ex: Exchange, socket: Duplex, head: Buffer, onAttempt?: (attempt: UpstreamAttempt) => void | Promise<void>, relay?: UpgradeRelay): void {
    forwardUpgrade(this, ex, socket, head, onAttempt, relay);
  }
}
