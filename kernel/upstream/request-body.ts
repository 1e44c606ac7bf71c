import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import type { Exchange } from '../sdk/index.ts';
import { RETRY_BUFFER_LIMIT } from '../exchange/upstream-plan.ts';
import { DrainedBody, readWhole } from '../exchange/body-read.ts';
import { bodyPutBack } from '../exchange/body-peek.ts';

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
  const req = ex.req;
  // A lean request (ADR 0088 addendum) has no stream to send, only its body read whole (at most 64 KiB).
  if (readWhole(req)) return ex.bufferBody(Infinity);
  if (streamTaken(req)) return Promise.reject(new DrainedBody());
  // A body of unknown length that is all here already (it came with its head) goes sized, can be sent again, and
  // needs no copy (ADR 0156): as undici sent an ended stream.
  return arrivedWhole(req) ? ex.bufferBody(RETRY_BUFFER_LIMIT) : req;
}

/**
 * Whether plugin code took bytes from the request stream itself (its `data` events; a peek puts what it read back,
 * ADR 0142): they are gone, so sending the stream would hand the upstream a cut or empty body (ADR 0155).
 */
export function streamTaken(req: IncomingMessage): boolean {
  return (req.readableDidRead || req.readableEnded) && !bodyPutBack(req);
}

/** The client's body has ended at the gateway within the replay buffer, none of it read yet. */
function arrivedWhole(req: IncomingMessage): boolean {
  return req.complete && !req.readableDidRead && req.readableLength <= RETRY_BUFFER_LIMIT;
}

/** A client body of declared length <= 64 KiB is read whole before it is sent (ADR 0050); others stream. */
export function readsFirst(headers: IncomingHttpHeaders): boolean {
  return Number(headers['content-length'] ?? NaN) <= RETRY_BUFFER_LIMIT;
}
