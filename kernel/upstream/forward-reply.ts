import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import type { Dispatcher } from 'undici';
import type { Span } from '@opentelemetry/api';
import { discardBody, ErrorCode } from '../sdk/index.ts';
import type { Exchange, Reply, UpstreamAttempt } from '../sdk/index.ts';
import type { ExchangeState } from '../exchange/kernel-exchange.ts';
import type { UpstreamPlan } from '../exchange/upstream-plan.ts';
import { requestBody, hasRequestBody } from './request-body.ts';
import { isPromiseLike } from '../sdk/settle-within.ts';
import { ReplayCopy } from './replay-copy.ts';
import { failedUnsent } from './answer-handler.ts';
import { attemptTimeout, InvalidStatusError, isHttpStatus, isRetryableFailure, UPLOAD_STALLED, upstreamFailure } from './upstream-errors.ts';
import { StreamAnswer } from './stream-answer.ts';
import { WholeAnswer, WholeReply } from './whole-answer.ts';
import type { WholeResponse } from './whole-answer.ts';
import type { PooledTarget } from './pooled-target.ts';
import { runUpstreamHook } from '../compile/run-hooks.ts';

// `forward()`'s path: the upstream's answer as a `Reply` (streamed body, or read whole), one attempt or the retry loop.

/**
 * `whole` of a forward streamed with the upstream's raw header list (`ForwardOptions.rawHeaders`); a positive `whole`
 * reads the answer whole up to that many bytes. 0 streams it as well: every streamed answer goes through
 * `StreamAnswer`, whose small chunks are joined and whose reading stops while the reader is behind (ADR 0156; undici's
 * `request()` kept a Buffer per chunk, ADR 0153).
 */
export const STREAM_RAW = -1;

/**
 * A retry's backoff, cut short when the exchange aborts (the client left, the route deadline answered it): no
 * attempt is sent after that, a POST sent again then would be a side effect nobody waits for.
 */
export function backoff(ms: number, ex: Exchange): Promise<void> {
  if (ms <= 0) return Promise.resolve();
  const signal = ex.signal;
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}

const noop = (): void => undefined;

/** A client that stopped sending its upload: answered 408 (`upstreamFailure`), as Envoy's stream idle timeout. */
const stalledUpload = (): Error => Object.assign(new Error('Request body stalled'), { code: UPLOAD_STALLED });

/**
 * Run `start` (the attempt's deadline) once the request body streamed from the client has been sent whole, at once for
 * a body in memory: Envoy's route timeout starts once the request was received (ADR 0117). Until then, no byte from the
 * client for `idleMs` (the stream idle deadline) fails the attempt through `stalled`: with the client's error when it
 * stopped sending, with the upstream's timeout when it stopped reading (the body waits, paused). Progress is read from
 * the client socket's byte count, checked when the timer fires: a `data` listener of ours would start the flow before
 * the client (undici) reads it. Returns the cancel for an attempt that ends first.
 */
function afterUpload(body: Buffer | IncomingMessage | null, idleMs: number, start: () => void, stalled: (err: Error) => void): () => void {
  if (body === null || Buffer.isBuffer(body) || body.readableEnded) {
    start();
    return noop;
  }
  const socket = body.socket;
  let seen = socket.bytesRead;
  const idle = idleMs > 0
    ? setTimeout(function check() {
        const read = socket.bytesRead;
        if (read !== seen) {
          seen = read;
          idle!.refresh();
        } else if (body.readableLength > 0 || body.readableFlowing === false) stalled(Object.assign(new Error('Body Timeout Error'), { code: 'UND_ERR_BODY_TIMEOUT' }));
        else stalled(stalledUpload());
      }, idleMs)
    : undefined;
  const ended = (): void => {
    clearTimeout(idle);
    start();
  };
  body.once('end', ended);
  return () => {
    clearTimeout(idle);
    body.off('end', ended);
  };
}

/**
 * The plain forward (no retry, no per-attempt hooks, no tracing): one attempt, one promise. The general loop below
 * is an async function whose awaits cost a promise and microtask turns each, on every request of a plain route.
 */
export function forwardOnce(target: PooledTarget, ex: Exchange, state: ExchangeState, plan: UpstreamPlan, whole: number): Promise<Reply> {
  // Before prepareHeaders: stripping Transfer-Encoding would hide a chunked request body.
  const hasBody = hasRequestBody(ex);
  const headers = target.prepareHeaders(ex, state);
  const body = requestBody(ex, headers, hasBody);
  if (isPromiseLike(body)) return Promise.resolve(body).then((read) => sendOnce(target, ex, state, headers, read, plan, whole));
  return sendOnce(target, ex, state, headers, body, plan, whole);
}

function sendOnce(target: PooledTarget, ex: Exchange, state: ExchangeState, headers: IncomingHttpHeaders, body: Buffer | IncomingMessage | null, plan: UpstreamPlan, whole: number): Promise<Reply> {
  state.attempts = 1;
  const sentAt = performance.now();
  return send(target, ex, state, ex.path + ex.query, headers, body, plan, whole).then(
    (response) => {
      target.metrics?.duration.observe((response.answeredAt - sentAt) / 1000);
      return new WholeReply(response);
    },
    (err: unknown) => {
      const failure = target.attemptFailed(err, sentAt, plan);
      if (!state.timedOut && !state.res?.destroyed) state.retryableFailure = isRetryableFailure(failure.code === ErrorCode.upstreamTimeout ? failure : err);
      throw failure;
    },
  );
}

/** Retries, per-attempt hooks (`onUpstream`, `onAttempt`) and a CLIENT span per attempt when tracing. */
export async function forwardAttempts(
  target: PooledTarget,
  ex: Exchange,
  state: ExchangeState,
  plan: UpstreamPlan,
  onAttempt: ((attempt: UpstreamAttempt) => void | Promise<void>) | undefined,
  whole: number,
): Promise<Reply> {
  // Before prepareHeaders: stripping Transfer-Encoding would hide a chunked request body.
  const hasBody = hasRequestBody(ex);
  const headers = target.prepareHeaders(ex, state);
  // The retry counter is the gateway's: a client's own would make the first try look like a retry upstream.
  if (plan.retry !== null && headers['x-retry-attempt'] !== undefined) headers['x-retry-attempt'] = undefined;
  const pending = requestBody(ex, headers, hasBody);
  let body = isPromiseLike(pending) ? await pending : pending;
  if (Buffer.isBuffer(body) && body.length > 0 && headers['content-length'] === undefined) headers['content-length'] = String(body.length);
  // A streamed body goes to the first attempt as it arrives, a copy kept for a retry here or on another backend (ADR 0152).
  const copy = body !== null && !Buffer.isBuffer(body) && plan.retry !== null ? new ReplayCopy(body, headers) : undefined;
  // Numbering goes on across backends when the pipeline sends a retry to another one (ADR 0023).
  const first = state.attempts;
  const maxAttempts = first + (plan.retry ? plan.retry.attempts + 1 : 1);
  /** The body for a retry, or false (its reason logged) when a streamed one cannot be sent again. */
  const replay = (): boolean => {
    if (copy === undefined || Buffer.isBuffer(body)) return true;
    const again = copy.replay();
    if (!Buffer.isBuffer(again)) {
      ex.logField('retry.skipped', again);
      return false;
    }
    body = again;
    headers['content-length'] = String(again.length);
    return true;
  };
  const path = ex.path + ex.query;
  // The retry budget (ADR 0125): this request counts as in flight; its first retry takes a slot, kept to the end.
  const budget = plan.retry?.budget;
  let held = false;
  // Asked again after the wait for an upload (below): a refusal is counted once.
  let refused = false;
  const mayRetry = (): boolean => {
    if (held || budget === undefined) return true;
    if (refused) return false;
    held = budget.take();
    refused = !held;
    if (refused) target.metrics?.retryOverflow();
    return held;
  };
  if (budget !== undefined) budget.active++;
  try {
    for (let attempt = first; ; attempt++) {
      // Aborted during a backoff (here or the pipeline's, before another backend): no further attempt.
      if (attempt > first && state.aborted !== undefined) throw state.aborted;
      state.attempts = attempt + 1;
      let attemptHeaders = headers;
      let attemptPath = path;
      if (attempt > 0) attemptHeaders = { ...headers, 'x-retry-attempt': String(attempt) };
      if (plan.upstreamHooks || onAttempt) {
        if (attempt === 0) attemptHeaders = { ...headers };
        const view: UpstreamAttempt = { method: ex.method, path, origin: target.origin, headers: attemptHeaders, body: Buffer.isBuffer(body) ? body : undefined, attempt };
        if (plan.upstreamHooks) {
          for (const hook of plan.upstreamHooks) {
            const r = runUpstreamHook(hook, ex, view);
            if (r) await r;
          }
        }
        if (onAttempt) await onAttempt(view);
        attemptPath = view.path;
      }
      let response: WholeResponse;
      // One CLIENT span per attempt (retries visible); the upstream gets its traceparent.
      const tracing = target.traces?.tracing ?? null;
      let span: Span | undefined;
      if (tracing !== null) {
        span = tracing.attempt(ex.method, target.parsed, path, attemptHeaders as Record<string, unknown>, attempt > 0 ? { 'http.request.resend_count': attempt } : undefined, state);
      }
      const sentAt = performance.now();
      try {
        response = await send(target, ex, state, attemptPath, attemptHeaders, body, plan, whole);
        if (!isHttpStatus(response.statusCode)) {
          discard(response.body);
          throw new InvalidStatusError(response.statusCode);
        }
        const at = response.answeredAt;
        target.metrics?.duration.observe((at - sentAt) / 1000);
        if (span !== undefined) tracing!.endClient(span, response.statusCode, undefined, whole > 0 ? at : undefined);
      } catch (err) {
        if (span !== undefined) tracing!.endClient(span, undefined, err);
        const failure = target.attemptFailed(err, sentAt, plan);
        if (state.timedOut || state.res?.destroyed) throw failure;
        const retryable = isRetryableFailure(failure.code === ErrorCode.upstreamTimeout ? failure : err);
        // Nothing of the request was written (it never connected): a body still arriving is let in whole for the
        // retry, here or on another backend (ADR 0156), under the stream idle deadline of an upload. Not when nothing
        // will send it again: the last attempt here (or the budget spent) and no other backend's turn after it.
        if (retryable && copy !== undefined && failedUnsent(err) && (attempt + 1 < maxAttempts ? mayRetry() : attempt + 1 <= (plan.retry!.failoverAttempts ?? 0))) {
          if (await copy.arrive(plan.idleTimeoutMs, ex.signal)) throw upstreamFailure(stalledUpload(), target.origin);
          if (state.timedOut || state.res?.destroyed) throw failure;
        }
        if (attempt + 1 < maxAttempts && retryable && replay() && mayRetry()) {
          target.metrics?.retry();
          await backoff(plan.retry!.backoffMs, ex);
          continue;
        }
        // The request never reached the upstream's application: the pipeline may send it to another backend.
        state.retryableFailure = retryable;
        throw failure;
      }
      if (attempt + 1 < maxAttempts && plan.retry!.codes.has(response.statusCode) && replay() && mayRetry()) {
        discard(response.body);
        target.metrics?.retry();
        await backoff(plan.retry!.backoffMs, ex);
        continue;
      }
      return new WholeReply(response);
    }
  } finally {
    // A copy whole by now is what the pipeline's retry on another backend sends (failover.ts); none: not retried.
    if (copy !== undefined) {
      const kept = copy.end();
      if (Buffer.isBuffer(kept)) state.receivedBody = kept;
      else state.replaySkip = kept;
    }
    if (budget !== undefined) {
      budget.active--;
      if (held) budget.retrying--;
    }
  }
}

/** Let go of an answer's body that is not relayed (a retried answer, one with an invalid status). */
function discard(body: WholeResponse['body']): void {
  if (!Buffer.isBuffer(body)) discardBody(body);
}

/**
 * One attempt through a dispatch handler of ours (not undici's `request()`), the answer read whole (ADR 0058) or
 * streamed with its raw headers (ADR 0081, 0156), with the route's deadlines and the exchange's abort.
 */
function send(target: PooledTarget, ex: Exchange, state: ExchangeState, path: string, headers: IncomingHttpHeaders, body: Buffer | IncomingMessage | null, plan: UpstreamPlan, limit: number): Promise<WholeResponse> {
  if (state.aborted !== undefined) return Promise.reject(state.aborted);
  const timeoutMs = plan.attemptTimeoutMs;
  const options = { path, method: ex.method as Dispatcher.HttpMethod, headers, body, headersTimeout: plan.headersTimeoutMs, bodyTimeout: plan.idleTimeoutMs };
  // To a cleartext HTTP/1.1 origin through the lean client (ADR 0084), as the direct forward (ADR 0073): no undici
  // `Request`, wasm parser or timers per request.
  const lean = target.h1 !== null && ex.method !== 'CONNECT' ? target.h1 : null;
  if (timeoutMs <= 0 && (lean !== null || body === null || Buffer.isBuffer(body))) {
    const handler = limit > 0 ? new WholeAnswer(limit, state) : new StreamAnswer(state);
    if (lean !== null) lean.dispatch(options, handler);
    else target.pool.dispatch(options, handler);
    return handler.promise;
  }
  // A per-attempt deadline: until the answer starts; the exchange's abort until it ended.
  const timeout = attemptTimeout(target.origin, timeoutMs);
  const outer = ex.signal;
  let timer: NodeJS.Timeout | undefined = undefined;
  let answered = false;
  const started = (): void => {
    answered = true;
    clearTimeout(timer);
  };
  const handler = limit > 0 ? new WholeAnswer(limit, null, started) : new StreamAnswer(null, started);
  const onOuter = (): void => handler.abort(outer.reason);
  if (outer.aborted) return Promise.reject(outer.reason);
  outer.addEventListener('abort', onOuter, { once: true });
  // From the end of the upload (an answer may start before it); the lean client bounds a stalled upload itself.
  const uploaded = afterUpload(
    body,
    lean !== null ? 0 : plan.idleTimeoutMs,
    () => {
      if (!answered && timeoutMs > 0) timer = setTimeout(() => handler.abort(timeout), timeoutMs);
    },
    (err) => handler.abort(err),
  );
  if (lean !== null) lean.dispatch(options, handler);
  else target.pool.dispatch(options, handler);
  const settled = (): void => {
    uploaded();
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
