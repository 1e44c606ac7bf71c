import type { IncomingMessage } from 'node:http';
import { ErrorCode, GatewayError } from '../sdk/index.ts';

const kPutBack = Symbol('switchyard.bodyPutBack');
type Marked = IncomingMessage & { [kPutBack]?: true };

/**
 * Whether bytes a reader took from `req` were put back (`readOrPutBack` past its limit): node:http then no longer
 * discards the body when the answer ends without reading it, as it does a body nobody started to read.
 */
export function bodyPutBack(req: IncomingMessage): boolean {
  return (req as Marked)[kPutBack] === true;
}

/** A deadline on the read: no byte for `ms` fails it with `error()`. */
export interface ReadStall {
  readonly ms: number;
  readonly error: () => Error;
}

/**
 * Read `req`'s body until it ends or passes `limit` bytes: the whole body, or, past the limit, `undefined` with the
 * bytes read put back in front of the stream (`unshift`, in order, not copied), so that whoever reads it next (the
 * forwarder streaming it upstream) gets every byte the client sent and pulls the rest with back-pressure: no more
 * than `limit` bytes and one chunk are held. A reply made while those bytes wait closes the connection
 * (reply-writer.ts), as one made while a body streams. A client that fails or leaves first is the 400 `bufferBody`
 * answers; `stall` adds an idle deadline (the retry path's; the idle sweep bounds the others).
 */
export function readOrPutBack(req: IncomingMessage, limit: number, stall?: ReadStall): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const idle = stall !== undefined && stall.ms > 0 ? setTimeout(() => fail(stall.error()), stall.ms) : undefined;
    // Read in paused mode: past the limit nothing more is taken off the stream, and once the listener is gone the
    // stream is neither flowing nor paused, so the next reader's 'data' listener, `pipe` or `resume` starts it.
    const onReadable = (): void => {
      idle?.refresh();
      for (let chunk = req.read() as Buffer | null; chunk !== null; chunk = req.read() as Buffer | null) {
        chunks.push(chunk);
        size += chunk.length;
        if (size <= limit) continue;
        done();
        for (let i = chunks.length - 1; i >= 0; i--) req.unshift(chunks[i]!);
        (req as Marked)[kPutBack] = true;
        return resolve(undefined);
      }
    };
    const onEnd = (): void => {
      done();
      resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
    };
    const onError = (err: Error): void => fail(new GatewayError(400, 'bad_request', `failed reading the request body: ${err.message}`, ErrorCode.badRequest));
    const onClose = (): void => {
      if (!req.complete) onError(new Error('client closed the connection'));
    };
    function done(): void {
      clearTimeout(idle);
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
