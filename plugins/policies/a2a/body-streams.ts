/**
 * Stream plumbing for response hooks: read a whole body (the agent card), or hand the kernel a new body stream and
 * work as the upstream's bytes go through (calls). `observe` ties the two streams' lifetimes together: an upstream
 * error fails the new body (the kernel then cuts the response), and a new body destroyed early (the client left)
 * destroys the upstream body so its connection is released.
 */
import { Readable, Transform } from 'node:stream';

function tie(source: Readable, out: Readable): void {
  source.on('error', (err) => out.destroy(err));
  out.on('close', () => {
    if (!source.destroyed && !source.readableEnded) source.destroy();
  });
}

/** Read a whole upstream body, failing with `tooLarge()` past `limit` bytes (the body is then destroyed). */
export function readWhole(source: Readable, limit: number, tooLarge: () => Error): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    source.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        source.destroy();
        reject(tooLarge());
        return;
      }
      chunks.push(chunk);
    });
    source.once('end', () => resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size)));
    source.once('error', reject);
    source.once('close', () => {
      if (!source.readableEnded) reject(new Error('the agent card stream closed early'));
    });
  });
}

/**
 * A body that passes every upstream chunk on at once (SSE keeps streaming) while `onChunk` sees it; `onEnd` runs
 * when the upstream body ended, before the client's response ends.
 */
export function observe(source: Readable, onChunk: (chunk: Buffer) => void, onEnd: () => void): Readable {
  const out = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      try {
        onChunk(chunk);
      } catch {
        // Observing never breaks the response.
      }
      callback(null, chunk);
    },
    flush(callback) {
      try {
        onEnd();
      } catch {
        // Observing never breaks the response.
      }
      callback();
    },
  });
  tie(source, out);
  source.pipe(out);
  return out;
}
