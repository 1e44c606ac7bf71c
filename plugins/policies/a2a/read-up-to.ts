import { PassThrough } from 'node:stream';
import type { Readable } from 'node:stream';
import { pipeWithTeardown } from 'switchyard/sdk';

/** The bytes of a chunk or an in-memory body (no copy of a Buffer's). */
export function bytesOf(body: string | Uint8Array | null | undefined): Buffer {
  if (body === null || body === undefined) return Buffer.alloc(0);
  if (typeof body === 'string') return Buffer.from(body, 'utf8');
  return Buffer.isBuffer(body) ? body : Buffer.from(body.buffer, body.byteOffset, body.byteLength);
}

/**
 * Read `body` until it ends or passes `limit` bytes: the whole body, or, past the limit, a stream that gives what
 * was read and then the rest, so an answer too large to look at still goes through untouched (`readCapped` would
 * destroy it). Rejects when the body fails or closes before its end while it is being read; past the limit the
 * stream and the body are tied as by `pipeWithTeardown`.
 */
export function readUpTo(body: Readable, limit: number): Promise<Buffer | Readable> {
  return new Promise((resolve, reject) => {
    const kept: Buffer[] = [];
    let size = 0;
    const stop = (): void => {
      body.off('data', onData);
      body.off('end', onEnd);
      body.off('error', onError);
      body.off('close', onClose);
    };
    const onData = (chunk: Buffer | Uint8Array | string): void => {
      const buf = bytesOf(chunk);
      kept.push(buf);
      size += buf.length;
      if (size <= limit) return;
      stop();
      body.pause();
      const rest = new PassThrough();
      for (const part of kept) rest.write(part);
      kept.length = 0;
      resolve(pipeWithTeardown(body, rest));
    };
    const onEnd = (): void => {
      stop();
      resolve(kept.length === 1 ? kept[0]! : Buffer.concat(kept, size));
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
