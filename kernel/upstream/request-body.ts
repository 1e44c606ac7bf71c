import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import type { Exchange } from '../sdk/index.ts';
import { RETRY_BUFFER_LIMIT } from '../exchange/upstream-plan.ts';
import { readWhole } from '../exchange/body-read.ts';
import { readOrPutBack } from '../exchange/body-peek.ts';
import { UPLOAD_STALLED, upstreamFailure } from './upstream-errors.ts';

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
export function requestBody(ex: Exchange, headers: IncomingHttpHeaders, hasBody: boolean): Buffer | IncomingMessage | null | PromiseLike<Buffer> {
  if (ex.body) return ex.body;
  if (!hasBody) return null;
  if (readsFirst(headers)) return ex.bufferBody(RETRY_BUFFER_LIMIT);
  // A lean request (ADR 0088 addendum) has no stream to send, only its body read whole (at most 64 KiB).
  return readWhole(ex.req) ? ex.bufferBody(Infinity) : ex.req;
}

/** A client body of declared length <= 64 KiB is read whole before it is sent (ADR 0050); others stream. */
export function readsFirst(headers: IncomingHttpHeaders): boolean {
  return Number(headers['content-length'] ?? NaN) <= RETRY_BUFFER_LIMIT;
}

export function isPromiseLike<T>(value: unknown): value is PromiseLike<T> {
  return typeof (value as { then?: unknown } | null)?.then === 'function';
}

/**
 * A body of undeclared length (chunked) on a route that retries, read up to `limit` bytes so a retry can send it
 * again, as Envoy buffers one: the Buffer when it ended within, else the same stream with what was read put back in
 * front, streamed as before (and not retried). No byte for `idleMs` (the stream idle deadline) is the 408 a stalled
 * upload gets; a client that fails or leaves first, 400.
 */
export async function readReplayable(req: IncomingMessage, limit: number, idleMs: number, origin: string): Promise<Buffer | IncomingMessage> {
  const stall = { ms: idleMs, error: () => upstreamFailure(Object.assign(new Error('Request body stalled'), { code: UPLOAD_STALLED }), origin) };
  return (await readOrPutBack(req, limit, stall)) ?? req;
}
