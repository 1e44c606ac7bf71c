import type { IncomingMessage } from 'node:http';
import { ErrorCode, GatewayError } from '../sdk/index.ts';
import { ChunkList } from '../sdk/chunk-list.ts';

const kPutBack = Symbol('switchyard.bodyPutBack');
type Marked = IncomingMessage & { [kPutBack]?: true };

/**
 * Whether bytes a reader took from `req` were put back (`readOrPutBack` past its limit): node:http then no longer
 * discards the body when the answer ends without reading it, as it does a body nobody started to read.
 */
export function bodyPutBack(req: IncomingMessage): boolean {
  return (req as Marked)[kPutBack] === true;
}

/**
 * Read `req`'s body until it ends or passes `limit` bytes: the whole body, or, past the limit, `undefined` with the
 * bytes read put back in front of the stream (`unshift`, in order; small chunks joined, `ChunkList`), so that whoever reads it next (the
 * forwarder streaming it upstream) gets every byte the client sent and pulls the rest with back-pressure: no more
 * than `limit` bytes and one chunk are held. A reply made while those bytes wait closes the connection
 * (reply-writer.ts), as one made while a body streams. A client that fails or leaves first is the 400 `bufferBody`
 * answers (the idle sweep bounds a stalled one).
 */
export function readOrPutBack(req: IncomingMessage, limit: number): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks = new ChunkList();
    // Read in paused mode: past the limit nothing more is taken off the stream, and once the listener is gone the
    // stream is neither flowing nor paused, so the next reader's 'data' listener, `pipe` or `resume` starts it.
    const onReadable = (): void => {
      for (let chunk = req.read() as Buffer | null; chunk !== null; chunk = req.read() as Buffer | null) {
        chunks.add(chunk);
        if (chunks.size <= limit) continue;
        done();
        const list = chunks.list();
        for (let i = list.length - 1; i >= 0; i--) req.unshift(list[i]!);
        (req as Marked)[kPutBack] = true;
        return resolve(undefined);
      }
    };
    const onEnd = (): void => {
      done();
      resolve(chunks.whole());
    };
    const onError = (err: Error): void => fail(new GatewayError(400, 'bad_request', `failed reading the request body: ${err.message}`, ErrorCode.badRequest));
    const onClose = (): void => {
      if (!req.complete) onError(new Error('client closed the connection'));
    };
    function done(): void {
      req.off('readable', onReadable);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('close', onClose);
    }
    function fail(err: Error): void {
      done();
      reject(err);
    }
    req.on('readable', onReadable);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('close', onClose);
  });
}

/** Kept on the request: a peek under way, and the largest limit the body was found to pass. */
interface PeekState {
  reading: Promise<Buffer | undefined> | undefined;
  past: number;
}

const kPeek = Symbol('switchyard.bodyPeek');
type Peeked = IncomingMessage & { [kPeek]?: PeekState };

/**
 * `Exchange.peekBody` on a request still on the wire (ADR 0142): the body when it ends within `limit` bytes, handed to
 * `keep` (the exchange keeps it as `bufferBody` would), else `undefined` and the body left to stream. A second peek
 * waits for the first; one no larger than a limit the body already passed reads nothing.
 */
export function peekRequestBody(req: IncomingMessage, limit: number, keep: (body: Buffer) => void): Promise<Buffer | undefined> {
  const state = ((req as Peeked)[kPeek] ??= { reading: undefined, past: -1 });
  if (state.reading !== undefined) return state.reading.then((body) => body ?? peekRequestBody(req, limit, keep));
  if (limit <= state.past) return Promise.resolve(undefined);
  const reading = readOrPutBack(req, limit).then(
    (body) => {
      state.reading = undefined;
      if (body === undefined) state.past = limit;
      else keep(body);
      return body;
    },
    (err: unknown) => {
      state.reading = undefined;
      throw err;
    },
  );
  state.reading = reading;
  return reading;
}

/** One copy being taken of a request's body (`copyRequestBody`). */
interface BodyCopy {
  readonly limit: number;
  readonly take: ((bytes: number) => boolean) | undefined;
  /** What was copied; dropped when the copy settles. */
  chunks: ChunkList;
  settle(body: Buffer | undefined): void;
}

/** The copies of one request's body under way, and the stream's own `push` they stand in front of. */
interface Copies {
  readonly list: BodyCopy[];
  readonly push: IncomingMessage['push'];
}

const kCopies = Symbol('switchyard.bodyCopies');
/** `_dumped`: node:http threw the body away unread (an answer ended first); the bytes after that were never pushed. */
type Copied = IncomingMessage & { [kCopies]?: Copies; _dumped?: boolean };

/** Keep `chunk` in `copy`, or settle it as no copy when it passes its limit or `take` refuses. */
function keep(copy: BodyCopy, chunk: Buffer): void {
  if (copy.chunks.size + chunk.length > copy.limit || (copy.take !== undefined && !copy.take(chunk.length))) copy.settle(undefined);
  else copy.chunks.add(chunk);
}

/** The stream's `push` while copies are taken: node:http (and the HTTP/2 compat layer) hand every body byte to it. */
function pushCopied(this: Copied, chunk: unknown, encoding?: BufferEncoding): boolean {
  const copies = this[kCopies]!;
  for (const copy of [...copies.list]) {
    if (chunk === null) copy.settle(this._dumped === true ? undefined : copy.chunks.whole());
    else if (Buffer.isBuffer(chunk)) keep(copy, chunk);
  }
  return copies.push.call(this, chunk, encoding);
}

/**
 * `Exchange.copyBody` on a request still on the wire (ADR 0148): a copy of the body taken as it arrives for whoever
 * reads it (the forwarder): the whole body once it ended within `limit` bytes, else `undefined` (longer, `take`
 * refused a chunk, the client failed or left, or the body was thrown away unread). It reads nothing ahead of the
 * reader nor holds it back: bytes are copied as node:http pushes them onto the stream, which the reader's
 * back-pressure paces; bytes already waiting on it are read and put back in place (`unshift`, as `readOrPutBack`
 * does), so each byte is copied once whoever reads, peeks or replays the stream later. At most `limit` bytes are
 * held, the stream's own chunks (small ones joined, `ChunkList`).
 */
export function copyRequestBody(req: IncomingMessage, limit: number, take?: (bytes: number) => boolean): Promise<Buffer | undefined> {
  // A peek under way holds what it read: the copy starts once that is back on the stream, or kept whole.
  const peek = (req as Peeked)[kPeek]?.reading;
  if (peek !== undefined) return peek.then((body) => (body === undefined ? copyRequestBody(req, limit, take) : body.length <= limit && (take === undefined || take(body.length)) ? body : undefined), () => undefined);
  // Read already by a reader that kept nothing, or being read in flowing mode: what it took is not ours to see.
  if (req.readableEnded || req.destroyed || req.readableFlowing === true) return Promise.resolve(undefined);
  const copied = req as Copied;
  return new Promise((resolve) => {
    const waiting = req.readableLength > 0 ? (req.read() as Buffer | null) : null;
    if (waiting !== null) {
      req.unshift(waiting);
      (req as Marked)[kPutBack] = true;
    }
    const size = waiting === null ? 0 : waiting.length;
    if (size > limit || (size > 0 && take !== undefined && !take(size))) return resolve(undefined);
    // All of it here already: what waits, or, nothing read before, an empty body.
    if (req.complete) return resolve(waiting ?? (req.readableDidRead ? undefined : Buffer.alloc(0)));
    const copies = (copied[kCopies] ??= { list: [], push: req.push });
    const onClose = (): void => copy.settle(undefined);
    const chunks = new ChunkList();
    if (waiting !== null) chunks.add(waiting);
    const copy: BodyCopy = {
      limit,
      take,
      chunks,
      settle(body) {
        const at = copies.list.indexOf(copy);
        if (at === -1) return; // settled already
        copies.list.splice(at, 1);
        if (copies.list.length === 0) delete (copied as { push?: unknown }).push;
        req.off('close', onClose);
        req.off('error', onClose);
        copy.chunks = new ChunkList();
        resolve(body);
      },
    };
    if (copies.list.length === 0) copied.push = pushCopied;
    copies.list.push(copy);
    req.on('close', onClose);
    req.on('error', onClose);
  });
}
