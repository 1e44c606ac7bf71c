/**
 * Stream plumbing every plugin needs and none should write again (ADR 0030): read a body into memory with a cap (or
 * up to a limit, passing a larger one on untouched), pipe one stream into another so that either side failing or leaving tears the other down, and watch the chunks
 * of a body as they pass on to the client.
 */
import { PassThrough, Transform } from 'node:stream';
import type { Readable, TransformCallback, Writable } from 'node:stream';
import { ChunkList } from './chunk-list.ts';

/** A body was larger than the cap it was read with. `limit` is that cap, in bytes. */
export class BodyTooLargeError extends RangeError {
  readonly limit: number;
  constructor(limit: number, message = `the body is larger than ${limit} bytes`) {
    super(message);
    this.name = 'BodyTooLargeError';
    this.limit = limit;
  }
}

/** Options of {@link readCapped}. */
export interface ReadCappedOptions {
  /** The error to reject with when the body passes the cap; a {@link BodyTooLargeError} when absent. */
  readonly tooLarge?: (limit: number) => Error;
}

function toBuffer(chunk: Buffer | Uint8Array | string): Buffer {
  if (typeof chunk === 'string') return Buffer.from(chunk, 'utf8');
  return Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
}

/** The bytes of an in-memory body (a reply's `string | Uint8Array | null`), without copying a Buffer's. */
export function bodyBytes(body: string | Uint8Array | null | undefined): Buffer {
  return body === null || body === undefined ? Buffer.alloc(0) : toBuffer(body);
}

/**
 * Read a whole body into memory, at most `limit` bytes. Past the cap the body is destroyed (its connection is
 * released, nothing more is read) and the promise rejects with `options.tooLarge(limit)` or a
 * {@link BodyTooLargeError}. A stream error rejects with that error; a stream that closes before its end rejects too.
 */
export function readCapped(body: Readable, limit: number, options?: ReadCappedOptions): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    // Small chunks joined as they come: an upstream answer in 1-byte chunks is not a Buffer per byte (ADR 0153).
    const chunks = new ChunkList();
    let settled = false;
    const fail = (err: Error): void => {
      if (settled) return;
      settled = true;
      reject(err);
    };
    body.on('data', (chunk: Buffer | Uint8Array | string) => {
      if (settled) return;
      const buf = toBuffer(chunk);
      if (chunks.size + buf.length > limit) {
        fail(options?.tooLarge ? options.tooLarge(limit) : new BodyTooLargeError(limit));
        body.destroy();
        return;
      }
      chunks.add(buf);
    });
    body.once('end', () => {
      if (settled) return;
      settled = true;
      resolve(chunks.whole());
    });
    body.once('error', fail);
    // `close` follows every `end`: the error (its stack trace is costly) is made only when the end never came.
    body.once('close', () => {
      if (!settled) fail(new Error('the stream closed before its end'));
    });
  });
}

/** {@link readCapped}, decoded as UTF-8. */
export async function readCappedText(body: Readable, limit: number, options?: ReadCappedOptions): Promise<string> {
  return (await readCapped(body, limit, options)).toString('utf8');
}

/**
 * Pipe `src` into `dst` and tie their lifetimes: an error of `src` destroys `dst` with it (a client then sees a
 * cut response, not a short one that looks complete), and `dst` closing before `src` ended (the client left)
 * destroys `src`, so an upstream connection is released. Returns `dst`.
 */
export function pipeWithTeardown<T extends Writable>(src: Readable, dst: T): T {
  src.on('error', (err) => dst.destroy(err));
  dst.on('close', () => {
    if (!src.readableEnded && !src.destroyed) src.destroy();
  });
  src.pipe(dst);
  return dst;
}

/**
 * Read `body` until it ends or passes `limit` bytes: the whole body, or, past the limit, a stream that gives what
 * was read and then the rest, so an answer too large to look at still goes through untouched (`readCapped` would
 * destroy it). Rejects when the body fails or closes before its end while it is being read; past the limit the
 * stream and the body are tied as by `pipeWithTeardown`.
 */
export function readUpTo(body: Readable, limit: number): Promise<Buffer | Readable> {
  return new Promise((resolve, reject) => {
    const kept = new ChunkList();
    const stop = (): void => {
      body.off('data', onData);
      body.off('end', onEnd);
      body.off('error', onError);
      body.off('close', onClose);
    };
    const onData = (chunk: Buffer | Uint8Array | string): void => {
      kept.add(toBuffer(chunk));
      if (kept.size <= limit) return;
      stop();
      body.pause();
      const rest = new PassThrough();
      for (const part of kept.list()) rest.write(part);
      resolve(pipeWithTeardown(body, rest));
    };
    const onEnd = (): void => {
      stop();
      resolve(kept.whole());
    };
    const onError = (err: Error): void => {
      stop();
      reject(err);
    };
    const onClose = (): void => {
      stop();
      reject(new Error('the body closed before its end'));
    };
    body.on('data', onData);
    body.once('end', onEnd);
    body.once('error', onError);
    body.once('close', onClose);
  });
}

/** What {@link tap} calls as a body passes. A throw from either is swallowed: watching never breaks a response. */
export interface TapObserver {
  /** Each chunk, before it is passed on. */
  readonly chunk?: (chunk: Buffer) => void;
  /** The source ended (not on an error or an early close), before the new body ends. */
  readonly end?: () => void;
}

class TapStream extends Transform {
  private readonly observer: TapObserver;
  constructor(observer: TapObserver) {
    super();
    this.observer = observer;
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    try {
      this.observer.chunk?.(chunk);
    } catch {
      // Watching never breaks the response.
    }
    callback(null, chunk);
  }

  override _flush(callback: TransformCallback): void {
    try {
      this.observer.end?.();
    } catch {
      // Watching never breaks the response.
    }
    callback();
  }
}

/**
 * A new body that passes every chunk of `source` on at once (a stream keeps streaming) while `observer` sees it.
 * The two are tied as by {@link pipeWithTeardown}.
 */
export function tap(source: Readable, observer: TapObserver): Readable {
  return pipeWithTeardown(source, new TapStream(observer));
}

/**
 * {@link tap} that also keeps the body, up to `limit` bytes, and hands it to `onEnd` when the source ends:
 * `undefined` when it was larger (what was kept is let go as soon as the cap is passed).
 */
export function tapCapped(source: Readable, limit: number, onEnd: (body: Buffer | undefined) => void): Readable {
  let chunks: ChunkList | undefined = new ChunkList();
  return tap(source, {
    chunk(chunk) {
      if (!chunks) return;
      if (chunks.size + chunk.length > limit) chunks = undefined;
      else chunks.add(chunk);
    },
    end() {
      onEnd(chunks?.whole());
    },
  });
}

/** Bytes of a body nobody reads that are still read to its end, so that its connection is reused (undici's `dump()` limit). */
export const DISCARD_LIMIT = 128 * 1024;

/** Longest a body nobody reads is read for: one trickling under `DISCARD_LIMIT` is destroyed then (ADR 0168). */
export const DISCARD_TIME_LIMIT_MS = 30_000;

/**
 * Let go of an upstream answer's body nobody reads (a retried answer, the answer to a notification): read to its end
 * when it is short, so its connection is reused; destroyed past `limit` bytes or `ms`, which ends the upstream request
 * and closes its connection. A body drained for as long as it came kept the gateway reading an endless one (ADR 0168).
 */
export function discardBody(body: Readable, limit = DISCARD_LIMIT, ms = DISCARD_TIME_LIMIT_MS): void {
  body.on('error', noop);
  const timer = setTimeout(() => body.destroy(), ms).unref();
  body.once('close', () => clearTimeout(timer));
  let left = limit;
  body.on('data', (chunk: Buffer) => {
    left -= chunk.length;
    if (left < 0) body.destroy();
  });
  // A listener does not restart a body paused by pause(): it would be neither read nor destroyed.
  body.resume();
}

/** Let go of a body no one will read, at once: destroyed, its late errors swallowed (no connection to keep). */
export function destroyBody(body: Readable): void {
  body.on('error', noop);
  body.destroy();
}

function noop(): void {}
