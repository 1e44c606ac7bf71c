import { Readable } from 'node:stream';
import { GatewayError, discardBody, isDeclinedReply, readCapped } from '../sdk/index.ts';
import type { Reply } from '../sdk/index.ts';
import type { CompiledBackendRef, CompiledRoute } from '../compile/snapshot.ts';
import type { ExchangeImpl } from './exchange-impl.ts';
import { pickBackend, pickInOrder } from './backend-pick.ts';
import { runRequestHooks } from '../compile/run-hooks.ts';
import { hasRequestBody } from '../upstream/request-body.ts';
import { backoff } from '../upstream/forward-reply.ts';

/** What `serveWithHealth` ended with: the last backend tried and its reply or error. */
export interface Outcome {
  ref: CompiledBackendRef;
  reply: Reply | undefined;
  error: unknown;
}

const isGatewayFailure = (status: number): boolean => status === 502 || status === 503 || status === 504;

/** Point the exchange at a backend: its upstream plan, log hooks and protocol label. */
function select(ex: ExchangeImpl, ref: CompiledBackendRef): void {
  ex.plan = ref.plan;
  ex.logHooks = ref.logHooks;
  if (ref.instance.protocol && ex.protocol === 'http') ex.protocol = ref.instance.protocol;
}

/**
 * Serve the exchange on a route whose backends have passive health checks or whose retries go to another
 * backend (ADR 0023): record each backend's outcome, and on a retryable failure send the request again to a
 * different backend when one is in rotation. Settles `outcome` with the reply (or the error) and the backend that
 * produced it, whose response hooks apply. With `order` (a route policy chose the backends, `selectBackends`) the
 * request goes only to those, each once, in that order.
 */
export async function serveWithHealth(ex: ExchangeImpl, route: CompiledRoute, first: CompiledBackendRef, outcome: Outcome, order?: readonly number[]): Promise<void> {
  const health = route.health;
  // What a backend may change on the way out (the host forwarder appends X-Forwarded-For, the `ai` backend
  // rewrites path and body), restored before the request goes to another backend.
  const h = ex.headers;
  const path = ex.path;
  const query = ex.query;
  const body = ex.body;
  const hadBody = hasRequestBody(ex);
  const xff = h['x-forwarded-for'];
  const contentEncoding = h['content-encoding'];
  const contentLength = h['content-length'];
  const transferEncoding = h['transfer-encoding'];
  // Default failover (ADR 0039) goes to backends of other kinds (an `ai` backend of another provider): every
  // header the first one set is undone, and each backend is tried once.
  const once = first.failover?.once === true || order !== undefined;
  const saved = once ? { ...h } : undefined;
  let tried: CompiledBackendRef[] | undefined;
  // A backend's failure kept while the next ones decline (`declineReply`): the client's answer if none serves. The
  // first decline is the answer when no backend ever did.
  let kept: Kept | undefined;
  let refusal: Outcome | undefined;
  /** The request as the first backend got it, for the next one. */
  const reset = (): void => {
    ex.path = path;
    ex.query = query;
    ex.body = body ?? ex.receivedBody;
    if (saved) {
      for (const name of Object.keys(h)) if (!(name in saved)) delete h[name];
      Object.assign(h, saved);
    } else {
      restore(h, 'x-forwarded-for', xff);
      restore(h, 'content-encoding', contentEncoding);
      restore(h, 'content-length', contentLength);
      restore(h, 'transfer-encoding', transferEncoding);
    }
  };
  let ref = first;
  for (;;) {
    select(ex, ref);
    const before = ex.attempts;
    ex.retryableFailure = false;
    let reply: Reply | undefined;
    let error: unknown;
    let handled = false;
    try {
      if (ref.requestHooks) reply = await runRequestHooks(ref.requestHooks, ex);
      if (!reply) {
        handled = true;
        reply = await ref.instance.handle(ex);
      }
    } catch (err) {
      error = err;
    }
    outcome.ref = ref;
    outcome.reply = reply;
    outcome.error = error;
    if (!handled) return;
    if (once && reply !== undefined && isDeclinedReply(reply)) {
      // This backend cannot carry the request (no upstream called, nothing said of its health): the next one may.
      (tried ??= []).push(ref);
      refusal ??= { ref, reply, error: undefined };
      const next = order !== undefined ? pickInOrder(route, order, tried) : pickBackend(route, ref, tried);
      if (next === undefined) {
        const last = kept !== undefined && (await kept.read) ? kept : refusal;
        select(ex, last.ref);
        outcome.ref = last.ref;
        outcome.reply = last.reply;
        outcome.error = last.error;
        return;
      }
      reset();
      ref = next;
      continue;
    }
    // Another backend answered: the kept failure is no one's answer (its body is being read to its end already).
    kept = undefined;
    const status = reply ? reply.status : error instanceof GatewayError ? error.status : 500;
    // A client that left says nothing about the backend. Its attempt, aborted, fails with undici's UND_ERR_ABORTED,
    // which reads as a 502: counted, 50 clients closing their connections at once (a load generator ending a run)
    // ejected a healthy backend, and `maxEjectionPercent` then kept a dead one in rotation. A route timeout (also an
    // abort) counts once the client had sent its whole request: the backend was too slow. Before that the client was:
    // a client trickling its upload past the route deadline ejected one healthy backend per request.
    if (health !== null && status !== 499 && (ex.aborted === undefined || (ex.timedOut && ex.req.complete))) {
      if (status >= 500) health.failure(ref.index, isGatewayFailure(status));
      else health.success(ref.index);
    }
    const fo = ref.failover;
    const due =
      fo !== null &&
      ex.attempts > before &&
      ex.attempts <= fo.attempts &&
      !ex.timedOut &&
      ex.aborted === undefined &&
      (reply ? fo.codes.has(reply.status) : ex.retryableFailure);
    const again = due && (!hadBody || body !== undefined || ex.receivedBody !== undefined);
    // A streamed body not kept whole for the retry (ADR 0152): the first failure is the answer, the log says why.
    if (due && !again && ex.replaySkip !== undefined) ex.logField('retry.skipped', ex.replaySkip);
    if (once) {
      // Only what an upstream answered cools a backend: a reply the gateway made itself (a key's budget 429) says
      // nothing about the provider, and cooling it for that took it out of rotation for every client.
      if (ref.cooldown !== null && ex.attempts > before && (reply ? fo !== null && fo.codes.has(reply.status) : ex.retryableFailure)) cool(ref, reply);
      if (!again) return;
      (tried ??= []).push(ref);
    } else if (!again) return;
    const next = order !== undefined ? pickInOrder(route, order, tried) : once ? pickBackend(route, ref, tried) : (pickBackend(route, ref) ?? ref);
    if (next === undefined) return;
    if (once) kept = keep(ref, reply, error);
    else drain(reply);
    reset();
    await backoff(fo.backoffMs, ex);
    // Aborted during the backoff: the last outcome stands, no other backend is tried.
    if (ex.aborted !== undefined) return;
    ref = next;
  }
}

/** Most of a failed backend's answer body kept while the next backends may decline: an error's, small. */
const KEPT_BODY_LIMIT = 64 * 1024;

/** A failed backend's outcome kept in case every later backend declines; `read`: whether its body was kept whole. */
interface Kept extends Outcome {
  readonly read: Promise<boolean>;
}

/**
 * Keep a failed backend's outcome: its body is read at once in the background, as a drain would, so its connection is
 * free while the next backend works (a call may take minutes), and kept when it fits (else the outcome is not used).
 */
function keep(ref: CompiledBackendRef, reply: Reply | undefined, error: unknown): Kept {
  const body = reply?.body;
  if (!(body instanceof Readable)) return { ref, reply, error, read: Promise.resolve(true) };
  const read = readCapped(body, KEPT_BODY_LIMIT).then(
    (bytes) => {
      reply!.body = bytes;
      return true;
    },
    () => false,
  );
  return { ref, reply, error, read };
}

/** A reply no client will get: a short body read to its end (its connection reused), a long or endless one destroyed. */
function drain(reply: Reply | undefined): void {
  if (reply && reply.body instanceof Readable) discardBody(reply.body);
}

/** Longest a provider's `Retry-After` keeps it out; a failure without one keeps it out for `FAILURE_COOLDOWN_MS`. */
const MAX_COOLDOWN_MS = 5 * 60_000;
const FAILURE_COOLDOWN_MS = 5_000;

/** A backend that failed under default failover cools down: for its `Retry-After` (429, 503), else briefly. */
function cool(ref: CompiledBackendRef, reply: Reply | undefined): void {
  const ms = reply && (reply.status === 429 || reply.status === 503) ? retryAfterMs(reply.headers['retry-after']) : undefined;
  ref.cooldown!.until = performance.now() + Math.min(ms ?? FAILURE_COOLDOWN_MS, MAX_COOLDOWN_MS);
}

/**
 * `Retry-After` as delay-seconds (fractions read too) or an HTTP date, in ms; undefined when absent or unreadable.
 * Only a value that starts with a day name is parsed as a date (all three HTTP-date forms do): V8's lenient
 * `Date.parse` read "1.5" and "-5" as dates in 2001, a cooldown of 0 instead of the failure one (ADR 0199).
 */
export function retryAfterMs(value: string | number | string[] | undefined): number | undefined {
  if (typeof value === 'number') return value * 1000;
  const v = (Array.isArray(value) ? value[0] : value)?.trim();
  if (v === undefined || v === '') return undefined;
  if (/^\d+(?:\.\d+)?$/.test(v)) return Number(v) * 1000;
  if (!/^[A-Za-z]{3,9},? /.test(v)) return undefined;
  const at = Date.parse(v);
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now());
}

function restore(h: ExchangeImpl['headers'], name: string, value: string | string[] | undefined): void {
  if (value === undefined) delete h[name];
  else h[name] = value;
}
