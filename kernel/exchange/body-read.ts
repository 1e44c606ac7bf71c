import type { IncomingMessage } from 'node:http';
import { ErrorCode, GatewayError } from '../sdk/index.ts';
import type { BodyReceiver } from '../sdk/index.ts';
import { ChunkList } from '../sdk/chunk-list.ts';

export type { BodyReceiver };

/** One read in progress, kept on the request under `kRead` so the listeners below can be shared by every request. */
class BodyRead {
  readonly limit: number;
  readonly receiver: BodyReceiver;
  /** The first chunk; most small bodies arrive in one. */
  first: Buffer | undefined = undefined;
  /** The chunks after it, small ones joined (a body in 1-byte chunks kept as it came is 200 times its size). */
  rest: ChunkList | undefined = undefined;
  size = 0;
  constructor(limit: number, receiver: BodyReceiver) {
    this.limit = limit;
    this.receiver = receiver;
  }
}

const kRead = Symbol('switchyard.bodyRead');
/**
 * On a request the lean server side read whole (LeanRequest, ADR 0088 addendum): its body (empty when none), handed
 * over by `readBody` as node:http's stream would have delivered it, the limit applied the same way.
 */
export const kWholeBody = Symbol('switchyard.wholeBody');
type Reading = IncomingMessage & { [kRead]?: BodyRead | undefined; [kWholeBody]?: Buffer | undefined };

/** Whether `req` was read whole by the lean server side: its body is read, never streamed (not a real stream). */
export function readWhole(req: IncomingMessage): boolean {
  return (req as Reading)[kWholeBody] !== undefined;
}

/**
 * Read `req`'s body whole, up to `limit` bytes (413 past it; 400 when the client fails or leaves first), and hand it
 * to `receiver`. The listeners are module functions reading their state from the request: a promise and four
 * closures per request were a measurable share of the plain route's allocations (docs/perf.md, session 6).
 */
export function readBody(req: IncomingMessage, limit: number, receiver: BodyReceiver): void {
  const whole = (req as Reading)[kWholeBody];
  if (whole !== undefined) {
    if (whole.length > limit) receiver.bodyFailed(new GatewayError(413, 'payload_too_large', `request body exceeds the ${limit}-byte limit`, ErrorCode.bodyTooLarge));
    else receiver.bodyRead(whole);
    return;
  }
  (req as Reading)[kRead] = new BodyRead(limit, receiver);
  req.on('data', onData);
  req.on('end', onEnd);
  req.on('error', onError);
  req.on('close', onClose);
}

function done(req: Reading): BodyRead {
  const read = req[kRead]!;
  req[kRead] = undefined;
  req.off('data', onData);
  req.off('end', onEnd);
  req.off('error', onError);
  req.off('close', onClose);
  return read;
}

function onData(this: Reading, chunk: Buffer): void {
  const read = this[kRead]!;
  read.size += chunk.length;
  if (read.size > read.limit) {
    done(this);
    this.resume();
    read.receiver.bodyFailed(new GatewayError(413, 'payload_too_large', `request body exceeds the ${read.limit}-byte limit`, ErrorCode.bodyTooLarge));
  } else if (read.first === undefined) read.first = chunk;
  else (read.rest ??= new ChunkList()).add(chunk);
}

function onEnd(this: Reading): void {
  const read = done(this);
  const body = read.rest !== undefined ? Buffer.concat([read.first!, ...read.rest.list()], read.size) : (read.first ?? Buffer.alloc(0));
  read.receiver.bodyRead(body);
}

function onError(this: Reading, err: Error): void {
  done(this).receiver.bodyFailed(new GatewayError(400, 'bad_request', `failed reading the request body: ${err.message}`, ErrorCode.badRequest));
}

function onClose(this: Reading): void {
  if (!this.complete) onError.call(this, new Error('client closed the connection'));
}

/**
 * The 500 of a request body plugin code read from `ex.req` itself (its `data` events) without handing it back with
 * `ex.setBody` (ADR 0144, 0155): what it read is gone, so the body cannot be sent upstream. The client hears no more
 * than "failed"; `logMessage` (the access log's `error`) says why, and a third-party hook or backend that met it is
 * named in its log line (run-hooks.ts).
 */
export class DrainedBody extends GatewayError {
  readonly logMessage =
    'the request body was read from `ex.req` by a plugin that did not hand it back with `ex.setBody(body)`; read it with `ex.bufferBody(limit)` instead';
  constructor() {
    super(500, 'internal_error', 'the gateway failed to handle the request', ErrorCode.internal);
    this.name = 'DrainedBody';
  }
}
