import type { IncomingHttpHeaders, IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { Duplex, Readable } from 'node:stream';
import type { Dispatcher } from 'undici';
import { ErrorCode, GatewayError } from '../sdk/index.ts';
import type {
  Exchange,
  ForwardOptions,
  HttpUpstreams,
  Reply,
  ResourceCache,
  UpstreamAttempt,
  UpstreamCallOptions,
  UpstreamResponse,
  UpstreamTarget,
  UpstreamTargetOptions,
} from '../sdk/index.ts';
import { DetachedState, exchangeState } from '../exchange/kernel-exchange.ts';
import type { ExchangeState } from '../exchange/kernel-exchange.ts';
import { RETRY_BUFFER_LIMIT } from '../exchange/upstream-plan.ts';
import type { UpstreamPlan } from '../exchange/upstream-plan.ts';
import { blankHopByHop, stripHopByHop } from './hop-by-hop.ts';
import { isIpLiteral, tlsConnectOptions, tlsConnector } from './tls-options.ts';
import { connectErrorCode, isRetryableFailure, upstreamFailure } from './upstream-errors.ts';
import type { BackendMetrics, UpstreamMetrics } from '../telemetry/upstream-metrics.ts';
import type { TracingHolder } from '../telemetry/tracing.ts';
import type { Span } from '@opentelemetry/api';
import { writeRawResponse } from './raw-response.ts';
import { ConnectGuard } from './connect-guard.ts';
import { buildConnector, Pool, poolRequest } from './undici-core.ts';
import { DirectForward } from './direct-forward.ts';
import type { DirectOrigin, DirectReplies } from './direct-forward.ts';
import { WholeAnswer } from './whole-answer.ts';
import type { WholeResponse } from './whole-answer.ts';

/** An attempt's answer: undici's `request()` result (a streamed body) or one read whole (`ForwardOptions.readWhole`). */
type Answer = Dispatcher.ResponseData | WholeResponse;

// Not `import … from 'node:http'`: an ES import builds http's namespace, which reads its lazy WebSocket getters and so
// loads Node's bundled undici (about 13 MiB and 25 ms at start, docs/perf.md "Startup").
const { request: httpRequest } = process.getBuiltinModule('node:http');

interface Origin {
  readonly href: string;
  readonly secure: boolean;
  readonly host: string;
  readonly port: number;
  /** host[:port] with the scheme's default port left out, as a Host header. */
  readonly authority: string;
}

function parseOrigin(origin: string): Origin {
  const url = new URL(origin);
  const secure = url.protocol === 'https:';
  const port = url.port ? Number(url.port) : secure ? 443 : 80;
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  return { href: `${url.protocol}//${url.host}`, secure, host, port, authority: url.host };
}

/** Why an upgrade's CLIENT span ended without an answer: the client left during the handshake. */
const CLIENT_GONE = { code: 'client_closed', message: 'the client left during the upgrade handshake' };

/** Bytes a client may send before the upstream accepted its upgrade. */
const EARLY_UPGRADE_DATA_LIMIT = 64 * 1024;

/** True when the client sent (or will send) a body, or a plugin set one. */
export function hasRequestBody(ex: Exchange): boolean {
  const body = ex.body;
  if (body) return body.length > 0;
  const h = ex.headers;
  return (h['content-length'] !== undefined && h['content-length'] !== '0') || h['transfer-encoding'] !== undefined;
}

/**
 * What is sent as the request body: the exchange's own (a plugin set one), none, or the client's. A body of declared,
 * small size is read before it is sent (as nginx does by default); larger or chunked bodies stream. Handing the
 * client's request stream to undici keeps each request's objects alive past two scavenges (a chain through promoted
 * garbage, also in a bare node:http + undici proxy): 10× the young-generation survivors, so each scavenge pauses
 * longer and the old generation fills with garbage (docs/perf.md "Tails and memory, session 5"). Read, the body can
 * also be sent again (retry, failover).
 */
function requestBody(ex: Exchange, headers: IncomingHttpHeaders, hasBody: boolean): Buffer | IncomingMessage | null | PromiseLike<Buffer> {
  if (ex.body) return ex.body;
  if (!hasBody) return null;
  return readsFirst(headers) ? ex.bufferBody(RETRY_BUFFER_LIMIT) : ex.req;
}

/** A client body of declared length ≤ 64 KiB is read whole before it is sent (ADR 0050); others stream. */
function readsFirst(headers: IncomingHttpHeaders): boolean {
  return Number(headers['content-length'] ?? NaN) <= RETRY_BUFFER_LIMIT;
}

function isPromiseLike<T>(value: unknown): value is PromiseLike<T> {
  return typeof (value as { then?: unknown } | null)?.then === 'function';
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** When the answer's headers arrived: now for `request()`'s (it resolves then), recorded by `WholeAnswer`. */
function answeredAt(response: Answer): number {
  return 'answeredAt' in response ? response.answeredAt : performance.now();
}

/** The upstream's answer as a Reply. Hop-by-hop response headers are dropped when it is written (reply-writer), for every backend. */
function upstreamReply(response: Answer): Reply {
  return { status: response.statusCode, headers: response.headers as Record<string, string | string[] | undefined>, body: response.body, local: false };
}

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

/** A reverse-proxy target over one reused undici pool. */
class PooledTarget implements UpstreamTarget, DirectForwarder, DirectOrigin {
  readonly origin: string;
  private readonly parsed: Origin;
  private readonly pool: Pool;
  private readonly useTargetAuthority: boolean;
  private readonly options: UpstreamTargetOptions;
  private readonly metrics: BackendMetrics | undefined;
  private readonly traces: TracingHolder | undefined;

  constructor(options: UpstreamTargetOptions, pool: Pool, metrics: UpstreamMetrics | undefined, traces?: TracingHolder) {
    this.options = options;
    this.traces = traces;
    this.parsed = parseOrigin(options.origin);
    this.origin = this.parsed.href;
    this.pool = pool;
    this.metrics = metrics?.forBackend(this.origin);
    this.useTargetAuthority = (options.authority ?? (isIpLiteral(this.parsed.host) ? 'request' : 'target')) === 'target';
  }

  /** Headers for the upstream: hop-by-hop removed, Host chosen, X-Forwarded-* added. Mutates ex.headers. */
  private prepareHeaders(ex: Exchange, state: ExchangeState): IncomingHttpHeaders {
    const h = ex.headers;
    blankHopByHop(h);
    const explicitAuthority = ex.authority !== state.clientAuthority;
    h.host = explicitAuthority || !this.useTargetAuthority ? ex.authority || this.parsed.authority : this.parsed.authority;
    const xff = h['x-forwarded-for'];
    h['x-forwarded-for'] = xff ? `${Array.isArray(xff) ? xff.join(', ') : xff}, ${state.peerAddress}` : state.peerAddress;
    h['x-forwarded-proto'] = ex.scheme;
    h['x-forwarded-host'] = state.clientAuthority;
    h['x-request-id'] = ex.requestId;
    // node:http already answered `Expect: 100-continue` to the client; undici refuses to send the header.
    if (h.expect !== undefined) h.expect = undefined;
    return h;
  }

  forward(ex: Exchange, onAttempt?: (attempt: UpstreamAttempt) => void | Promise<void>, options?: ForwardOptions): Promise<Reply> {
    // The request's own state (shared by its views); an exchange a plugin made itself gets a fresh one.
    const state = exchangeState(ex) ?? new DetachedState(ex);
    const plan = state.plan;
    const whole = options?.readWhole ?? 0;
    if (plan.retry === null && plan.upstreamHooks === null && onAttempt === undefined && state.attempts === 0 && (this.traces?.tracing ?? null) === null) {
      try {
        return this.forwardOnce(ex, state, plan, whole);
      } catch (err) {
        return Promise.reject(err); // as the async path does: callers get a rejection, never a throw
      }
    }
    return this.forwardAttempts(ex, state, plan, onAttempt, whole);
  }

  /**
   * The plain forward (no retry, no per-attempt hooks, no tracing): one attempt, one promise. The general loop below
   * is an async function whose awaits cost a promise and microtask turns each, on every request of a plain route.
   */
  private forwardOnce(ex: Exchange, state: ExchangeState, plan: UpstreamPlan, whole: number): Promise<Reply> {
    // Before prepareHeaders: stripping Transfer-Encoding would hide a chunked request body.
    const hasBody = hasRequestBody(ex);
    const headers = this.prepareHeaders(ex, state);
    const body = requestBody(ex, headers, hasBody);
    if (isPromiseLike(body)) return Promise.resolve(body).then((read) => this.sendOnce(ex, state, headers, read, plan, whole));
    return this.sendOnce(ex, state, headers, body, plan, whole);
  }

  private sendOnce(ex: Exchange, state: ExchangeState, headers: IncomingHttpHeaders, body: Buffer | IncomingMessage | null, plan: UpstreamPlan, whole: number): Promise<Reply> {
    state.attempts = 1;
    const sentAt = performance.now();
    return this.send(ex, state, ex.path + ex.query, headers, body, plan, whole).then(
      (response) => {
        this.metrics?.duration.observe((answeredAt(response) - sentAt) / 1000);
        return upstreamReply(response);
      },
      (err: unknown) => {
        const failure = this.attemptFailed(err, sentAt, plan);
        if (!state.timedOut && !state.res?.destroyed) state.retryableFailure = isRetryableFailure(failure.code === ErrorCode.upstreamTimeout ? failure : err);
        throw failure;
      },
    );
  }

  forwardInto<E extends Exchange>(ex: E, res: ServerResponse, replies: DirectReplies<E>): boolean {
    const state = exchangeState(ex);
    if (state?.readBodyInto === undefined || state.attempts !== 0) return false;
    const plan = state.plan;
    if (plan.retry !== null || plan.upstreamHooks !== null || plan.attemptTimeoutMs > 0) return false;
    // Before prepareHeaders: stripping Transfer-Encoding would hide a chunked request body.
    const hasBody = hasRequestBody(ex);
    const headers = this.prepareHeaders(ex, state);
    const handler = new DirectForward(ex, state, res, replies, this, headers);
    // requestBody's choice, with the read handing the body to the handler instead of a promise.
    if (ex.body) handler.send(ex.body);
    else if (!hasBody) handler.send(null);
    else if (readsFirst(headers)) state.readBodyInto(RETRY_BUFFER_LIMIT, handler);
    else handler.send(ex.req);
    return true;
  }

  dispatchDirect(ex: Exchange, plan: UpstreamPlan, headers: IncomingHttpHeaders, body: Buffer | IncomingMessage | null, handler: Dispatcher.DispatchHandler): void {
    // Default deadlines (ADR 0019) ride on undici's own parser timers, as in `send`.
    this.pool.dispatch(
      { path: ex.path + ex.query, method: ex.method as Dispatcher.HttpMethod, headers, body, headersTimeout: plan.headersTimeoutMs, bodyTimeout: plan.idleTimeoutMs },
      handler,
    );
  }

  /** Traced requests keep the direct path (ADR 0055): the attempt's CLIENT span, as `forwardAttempts` makes it. */
  attemptSpan(ex: Exchange, headers: IncomingHttpHeaders): Span | undefined {
    const tracing = this.traces?.tracing ?? null;
    return tracing === null ? undefined : tracing.client(ex.method, this.parsed, ex.path + ex.query, headers as Record<string, unknown>, undefined, exchangeState(ex)?.traceParent);
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

  private async forwardAttempts(
    ex: Exchange,
    state: ExchangeState,
    plan: UpstreamPlan,
    onAttempt: ((attempt: UpstreamAttempt) => void | Promise<void>) | undefined,
    whole: number,
  ): Promise<Reply> {
    // Before prepareHeaders: stripping Transfer-Encoding would hide a chunked request body.
    const hasBody = hasRequestBody(ex);
    const headers = this.prepareHeaders(ex, state);
    const pending = requestBody(ex, headers, hasBody);
    const body = isPromiseLike(pending) ? await pending : pending;
    const replayable = body === null || Buffer.isBuffer(body);
    // Numbering goes on across backends when the pipeline sends a retry to another one (ADR 0023).
    const first = state.attempts;
    const maxAttempts = first + (plan.retry && replayable ? plan.retry.attempts + 1 : 1);
    const path = ex.path + ex.query;
    for (let attempt = first; ; attempt++) {
      state.attempts = attempt + 1;
      let attemptHeaders = headers;
      if (attempt > 0) attemptHeaders = { ...headers, 'x-retry-attempt': String(attempt) };
      if (plan.upstreamHooks || onAttempt) {
        if (attempt === 0) attemptHeaders = { ...headers };
        const view: UpstreamAttempt = { method: ex.method, path, origin: this.origin, headers: attemptHeaders, body: Buffer.isBuffer(body) ? body : undefined, attempt };
        if (plan.upstreamHooks) {
          for (const hook of plan.upstreamHooks) {
            const r = hook.onUpstream!(ex, view);
            if (r) await r;
          }
        }
        if (onAttempt) await onAttempt(view);
      }
      let response: Answer;
      // One CLIENT span per attempt (retries visible); the upstream gets its traceparent.
      const tracing = this.traces?.tracing ?? null;
      let span: Span | undefined;
      if (tracing !== null) {
        span = tracing.client(ex.method, this.parsed, path, attemptHeaders as Record<string, unknown>, attempt > 0 ? { 'http.request.resend_count': attempt } : undefined, state.traceParent);
      }
      const sentAt = performance.now();
      try {
        response = await this.send(ex, state, path, attemptHeaders, body, plan, whole);
        const at = answeredAt(response);
        this.metrics?.duration.observe((at - sentAt) / 1000);
        if (span !== undefined) tracing!.endClient(span, response.statusCode, undefined, whole > 0 ? at : undefined);
      } catch (err) {
        if (span !== undefined) tracing!.endClient(span, undefined, err);
        const failure = this.attemptFailed(err, sentAt, plan);
        if (state.timedOut || state.res?.destroyed) throw failure;
        const retryable = isRetryableFailure(failure.code === ErrorCode.upstreamTimeout ? failure : err);
        if (attempt + 1 < maxAttempts && retryable) {
          this.metrics?.retry();
          if (plan.retry!.backoffMs) await sleep(plan.retry!.backoffMs);
          continue;
        }
        // The request never reached the upstream's application: the pipeline may send it to another backend.
        state.retryableFailure = retryable;
        throw failure;
      }
      if (attempt + 1 < maxAttempts && plan.retry!.codes.has(response.statusCode)) {
        if (!Buffer.isBuffer(response.body)) {
          response.body.on('error', () => undefined);
          if ('dump' in response.body) response.body.dump().catch(() => undefined);
          else response.body.destroy();
        }
        this.metrics?.retry();
        if (plan.retry!.backoffMs) await sleep(plan.retry!.backoffMs);
        continue;
      }
      return upstreamReply(response);
    }
  }

  private send(
    ex: Exchange,
    state: ExchangeState,
    path: string,
    headers: IncomingHttpHeaders,
    body: Buffer | IncomingMessage | null,
    plan: UpstreamPlan,
    whole: number,
  ): Promise<Answer> {
    const timeoutMs = plan.attemptTimeoutMs;
    // Default deadlines (ADR 0019) ride on undici's own parser timers: no timer or closure of ours per request.
    const headersTimeout = plan.headersTimeoutMs;
    const bodyTimeout = plan.idleTimeoutMs;
    if (whole > 0) return this.sendWhole(ex, state, path, headers, body, plan, whole);
    if (timeoutMs <= 0) {
      if (state.aborted !== undefined) return Promise.reject(state.aborted);
      const signal = state.abortHook() as unknown as AbortSignal;
      return poolRequest(this.pool, { path, method: ex.method as Dispatcher.HttpMethod, headers, body, signal, headersTimeout, bodyTimeout });
    }
    // One controller per attempt: it aborts on the attempt deadline and when the whole exchange aborts.
    const attempt = new AbortController();
    const outer = ex.signal;
    const onOuter = (): void => attempt.abort(outer.reason);
    outer.addEventListener('abort', onOuter, { once: true });
    const timeout = new GatewayError(504, 'upstream_timeout', `upstream ${this.origin} did not answer within ${timeoutMs}ms`, ErrorCode.upstreamTimeout);
    const timer = setTimeout(() => attempt.abort(timeout), timeoutMs);
    return poolRequest(this.pool, { path, method: ex.method as Dispatcher.HttpMethod, headers, body, signal: attempt.signal, headersTimeout, bodyTimeout })
      .then(
        (response) => {
          clearTimeout(timer);
          outer.removeEventListener('abort', onOuter);
          return response;
        },
        (err: unknown) => {
          clearTimeout(timer);
          outer.removeEventListener('abort', onOuter);
          throw attempt.signal.aborted && attempt.signal.reason === timeout ? timeout : err;
        },
      );
  }

  /** `send` with the answer read whole through a dispatch handler (ADR 0058): the same deadlines and aborts. */
  private sendWhole(ex: Exchange, state: ExchangeState, path: string, headers: IncomingHttpHeaders, body: Buffer | IncomingMessage | null, plan: UpstreamPlan, limit: number): Promise<WholeResponse> {
    if (state.aborted !== undefined) return Promise.reject(state.aborted);
    const timeoutMs = plan.attemptTimeoutMs;
    const options = { path, method: ex.method as Dispatcher.HttpMethod, headers, body, headersTimeout: plan.headersTimeoutMs, bodyTimeout: plan.idleTimeoutMs };
    if (timeoutMs <= 0) {
      const handler = new WholeAnswer(limit, state);
      this.pool.dispatch(options, handler);
      return handler.promise;
    }
    // A per-attempt deadline (as in `send`): until the answer starts; the exchange's abort until it ended.
    const timeout = new GatewayError(504, 'upstream_timeout', `upstream ${this.origin} did not answer within ${timeoutMs}ms`, ErrorCode.upstreamTimeout);
    const outer = ex.signal;
    let timer: NodeJS.Timeout | undefined = undefined;
    const handler = new WholeAnswer(limit, null, () => clearTimeout(timer));
    const onOuter = (): void => handler.abort(outer.reason);
    if (outer.aborted) return Promise.reject(outer.reason);
    outer.addEventListener('abort', onOuter, { once: true });
    timer = setTimeout(() => handler.abort(timeout), timeoutMs);
    this.pool.dispatch(options, handler);
    const settled = (): void => {
      clearTimeout(timer);
      outer.removeEventListener('abort', onOuter);
    };
    return handler.promise.then(
      (response) => {
        settled();
        return response;
      },
      (err: unknown) => {
        settled();
        throw err;
      },
    );
  }

  async request(options: UpstreamCallOptions): Promise<UpstreamResponse> {
    const headers = { ...(options.headers ?? {}) } as Record<string, string>;
    if (!Object.keys(headers).some((k) => k.toLowerCase() === 'host')) headers.host = this.parsed.authority;
    if (options.onAttempt) {
      const body = typeof options.body === 'string' ? Buffer.from(options.body) : options.body instanceof Uint8Array ? Buffer.from(options.body.buffer, options.body.byteOffset, options.body.byteLength) : undefined;
      await options.onAttempt({ method: options.method, path: options.path, origin: this.origin, headers, body, attempt: 0 });
    }
    const tracing = this.traces?.tracing ?? null;
    const span = tracing === null ? undefined : tracing.client(options.method, this.parsed, options.path, headers, options.what === undefined ? undefined : { 'switchyard.upstream.purpose': options.what });
    const signals: AbortSignal[] = [];
    if (options.signal) signals.push(options.signal);
    if (options.timeoutMs) signals.push(AbortSignal.timeout(options.timeoutMs));
    try {
      const response = await poolRequest(this.pool, {
        path: options.path,
        method: options.method as Dispatcher.HttpMethod,
        headers,
        body: (options.body ?? null) as string | Buffer | Readable | null,
        signal: signals.length === 0 ? undefined : signals.length === 1 ? signals[0] : AbortSignal.any(signals),
        headersTimeout: options.headersTimeoutMs ?? 0,
        bodyTimeout: options.idleTimeoutMs ?? 0,
      });
      if (span !== undefined) tracing!.endClient(span, response.statusCode);
      return { status: response.statusCode, headers: response.headers as IncomingHttpHeaders, body: response.body };
    } catch (err) {
      if (span !== undefined) tracing!.endClient(span, undefined, err);
      if ((err as Error)?.name === 'TimeoutError') {
        throw new GatewayError(504, 'upstream_timeout', `upstream ${this.origin} timed out`, ErrorCode.upstreamTimeout);
      }
      throw upstreamFailure(err, this.origin);
    }
  }

  upgrade(ex: Exchange, socket: Duplex, head: Buffer): void {
    const state = exchangeState(ex) ?? new DetachedState(ex);
    const hooks = state.plan.upstreamHooks;
    if (!hooks) return this.sendUpgrade(ex, socket, head, this.upgradeHeaders(ex, state));
    // Per-attempt hooks (backendAuth) sign the upgrade request as they sign any other request. A client that leaves
    // while they run (a token fetch) is noticed by sendUpgrade.
    const headers = this.upgradeHeaders(ex, state);
    const view: UpstreamAttempt = { method: ex.method, path: ex.path + ex.query, origin: this.origin, headers: headers as IncomingHttpHeaders, body: undefined, attempt: 0 };
    void (async () => {
      for (const hook of hooks) await hook.onUpstream!(ex, view);
    })().then(
      () => this.sendUpgrade(ex, socket, head, headers),
      (err: unknown) => {
        const failure = err instanceof GatewayError ? err : upstreamFailure(err, this.origin);
        state.upgradeDone?.(failure.status);
        writeRawResponse(socket, failure.status, { 'content-type': 'application/json' }, JSON.stringify({ error: { type: failure.type, message: failure.message } }));
      },
    );
  }

  /** The upgrade request's headers: hop-by-hop removed (Upgrade/Connection kept), Host chosen, X-Forwarded-* added. */
  private upgradeHeaders(ex: Exchange, state: ExchangeState): OutgoingHttpHeaders {
    const headers = { ...ex.headers } as OutgoingHttpHeaders;
    stripHopByHop(headers as IncomingHttpHeaders, true);
    const explicitAuthority = ex.authority !== state.clientAuthority;
    headers.host = explicitAuthority || !this.useTargetAuthority ? ex.authority : this.parsed.authority;
    const xff = ex.headers['x-forwarded-for'];
    headers['x-forwarded-for'] = xff ? `${Array.isArray(xff) ? xff.join(', ') : xff}, ${state.peerAddress}` : state.peerAddress;
    headers['x-forwarded-proto'] = ex.scheme;
    headers['x-forwarded-host'] = state.clientAuthority;
    headers['x-request-id'] = ex.requestId;
    return headers;
  }

  private sendUpgrade(ex: Exchange, socket: Duplex, head: Buffer, headers: OutgoingHttpHeaders): void {
    const state = exchangeState(ex);
    const done = state?.upgradeDone;
    if (socket.destroyed) return done?.(499);
    // When tracing: a CLIENT span for the upstream handshake (its traceparent goes upstream), ended with its outcome.
    const tracing = this.traces?.tracing ?? null;
    const span = tracing === null ? undefined : tracing.client(ex.method, this.parsed, ex.path + ex.query, headers as Record<string, unknown>, undefined, state?.traceParent);
    let settled = false;
    const settle = (status: number | undefined, err?: unknown): void => {
      if (settled) return;
      settled = true;
      if (span !== undefined) tracing!.endClient(span, status, err);
      done?.(status ?? 499);
    };
    const send = this.parsed.secure ? httpsRequest : httpRequest;
    const upReq = send({
      host: this.parsed.host,
      port: this.parsed.port,
      method: ex.method,
      path: ex.path + ex.query,
      headers,
      ...(this.parsed.secure ? tlsConnectOptions(this.options.tls, this.parsed.host) : {}),
    });
    socket.on('error', () => upReq.destroy());
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
    upReq.on('upgrade', (upRes, upSocket, upHead) => {
      socket.off('data', onEarlyData);
      socket.off('end', onClientGone);
      socket.off('close', onClientGone);
      if (socket.destroyed) {
        settle(undefined, CLIENT_GONE);
        return void upSocket.destroy();
      }
      settle(upRes.statusCode ?? 101);
      let lines = `HTTP/1.1 ${upRes.statusCode ?? 101} ${upRes.statusMessage ?? 'Switching Protocols'}\r\n`;
      for (let i = 0; i < upRes.rawHeaders.length; i += 2) lines += `${upRes.rawHeaders[i]}: ${upRes.rawHeaders[i + 1]}\r\n`;
      socket.write(`${lines}\r\n`);
      if (upHead.length) socket.write(upHead);
      if (head.length) upSocket.write(head);
      if (early) for (const chunk of early) upSocket.write(chunk);
      upSocket.on('error', () => socket.destroy());
      socket.on('close', () => upSocket.destroy());
      upSocket.on('close', () => socket.destroy());
      upSocket.pipe(socket);
      socket.pipe(upSocket);
    });
    upReq.on('response', (upRes) => {
      // The upstream declined the upgrade: relay its answer as is.
      settle(upRes.statusCode ?? 502);
      const responseHeaders = { ...upRes.headers };
      stripHopByHop(responseHeaders);
      const chunks: Buffer[] = [];
      upRes.on('data', (c: Buffer) => chunks.push(c));
      upRes.on('end', () => writeRawResponse(socket, upRes.statusCode ?? 502, responseHeaders, Buffer.concat(chunks)));
      upRes.on('error', () => socket.destroy());
    });
    upReq.on('error', (err) => {
      const failure = upstreamFailure(err, this.origin);
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
}

/** Upstream targets over pools kept in the generational resource cache (so reloads keep warm connections). */
export class PooledUpstreams implements HttpUpstreams {
  private readonly resources: ResourceCache;
  private readonly metrics: UpstreamMetrics | undefined;
  private readonly traces: TracingHolder | undefined;
  constructor(resources: ResourceCache, metrics?: UpstreamMetrics, traces?: TracingHolder) {
    this.resources = resources;
    this.metrics = metrics;
    this.traces = traces;
  }

  target(options: UpstreamTargetOptions): UpstreamTarget {
    const parsed = parseOrigin(options.origin);
    const key = `pool:${parsed.href}:${parsed.secure ? JSON.stringify(options.tls ?? {}) : ''}`;
    const pool = this.resources.get(
      key,
      () => {
        // TLS: SNI and the verified name are pinned to the backend (or `hostname`), never the request's Host.
        const guard = new ConnectGuard(parsed.secure ? tlsConnector(options.tls, parsed.host) : buildConnector({}));
        const created = new Pool(parsed.href, {
          connect: guard.connect,
          allowH2: options.tls?.alpn?.includes('h2') ?? false,
          // No pool-wide deadlines: forwarded requests carry their route's (ADR 0019); plugin-made calls set their own.
          headersTimeout: 0,
          bodyTimeout: 0,
          keepAliveTimeout: 30_000,
        });
        guard.watch(created);
        return created;
      },
      // Let in-flight calls finish, but do not let a stuck one (a slow mirror, say) hold shutdown.
      (p) => Promise.race([p.close(), new Promise((resolve) => setTimeout(resolve, 1000).unref())]).then(() => p.destroy()).catch(() => undefined),
    );
    return new PooledTarget(options, pool, this.metrics, this.traces);
  }
}
