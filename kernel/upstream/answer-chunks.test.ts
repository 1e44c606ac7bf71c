// An upstream answer in 1-byte chunk frames (chunked framing, a raw `net` server) is held joined by every reader that
// keeps it in memory (ADR 0153), as client bodies are (ADR 0148): kept as it came, each byte was a Buffer of its own
// (some 200 bytes of heap), so 512 KiB held over 100 MiB. Heap is measured while the answer is still open.
import assert from 'node:assert/strict';
import { request } from 'node:http';
import type { IncomingMessage } from 'node:http';
import type { Readable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { BYTE_CHUNKS, heldMessage, startByteChunkUpstream } from '../../test/helpers/byte-chunk-upstream.ts';
import type { ByteChunkUpstream } from '../../test/helpers/byte-chunk-upstream.ts';
import { readCapped, readUpTo, tapCapped } from '../sdk/index.ts';
import type { Exchange, Reply } from '../sdk/index.ts';
import { H1Pool } from './h1-pool.ts';
import { PooledTarget } from './pooled-target.ts';
import { LazyPool } from './undici-core.ts';

const LIMIT = 24 * 1024 * 1024;

describe('an upstream answer in 1-byte chunks is held joined', () => {
  let upstream: ByteChunkUpstream;
  before(async () => {
    upstream = await startByteChunkUpstream();
  });
  after(() => upstream.close());

  const check = (name: string, held: number, body: unknown): void => {
    assert.ok(Buffer.isBuffer(body), name);
    assert.equal(body.length, BYTE_CHUNKS, name);
    assert.ok(body.every((b) => b === 0x78), name);
    assert.ok(held < LIMIT, heldMessage(name, held));
  };

  /** The answer as node:http's client gives it (how plugins fetch JWKS, OpenAPI documents, guard answers). */
  function get(): Promise<IncomingMessage> {
    return new Promise((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port: upstream.port, path: '/', agent: false }, resolve);
      req.on('error', reject);
      req.end();
    });
  }

  async function byReader(name: string, reader: (res: Readable) => Promise<Buffer | undefined>): Promise<void> {
    const { held, result } = await upstream.heldFor(async () => reader(await get()));
    check(name, held, result);
  }

  it('readCapped, readUpTo and tapCapped (the readers of plugins: MCP targets, LLM guards, JWKS, OpenAPI)', async () => {
    await byReader('readCapped', (res) => readCapped(res, 1024 * 1024));
    await byReader('readUpTo', async (res) => (await readUpTo(res, 1024 * 1024)) as Buffer);
    await byReader('tapCapped', (res) => new Promise((resolve) => void tapCapped(res, 1024 * 1024, resolve).resume()));
  });

  it('a streamed answer (`rawHeaders`) its reader has not read yet: small chunks pushed joined, every byte in order', async () => {
    const h1 = new H1Pool('127.0.0.1', upstream.port);
    const undici = new LazyPool(() => {
      throw new Error('undici was asked for');
    });
    const target = new PooledTarget({ origin: upstream.origin }, undici, undefined, undefined, h1);
    try {
      // Read as it was before its end: the body is the stream, paused, its buffer up to its high-water mark.
      const { held, result } = await upstream.heldFor(() => target.forward(exchange(), undefined, { rawHeaders: true }));
      const body = (result as Reply).body as Readable;
      const parts: Buffer[] = [];
      for await (const part of body) parts.push(part as Buffer);
      check('streamed', held, Buffer.concat(parts));
      assert.ok(held < 3 * 1024 * 1024, heldMessage('streamed', held));
      assert.ok(parts.length < 1000, `${parts.length} chunks for 512 KiB`);
    } finally {
      await h1.destroy();
    }
  });

  it('an answer read whole by the kernel (`readWhole`, the lean client)', async () => {
    const h1 = new H1Pool('127.0.0.1', upstream.port);
    const undici = new LazyPool(() => {
      throw new Error('undici was asked for');
    });
    const target = new PooledTarget({ origin: upstream.origin }, undici, undefined, undefined, h1);
    try {
      const { held, result } = await upstream.heldFor(() => target.forward(exchange(), undefined, { readWhole: 1024 * 1024 }));
      check('readWhole', held, (result as Reply).body);
    } finally {
      await h1.destroy();
    }
  });
});

/** A plugin-made exchange over the SDK interface alone: a GET without a body. */
function exchange(): Exchange {
  const ex: Exchange = {
    req: undefined as never,
    method: 'GET',
    path: '/',
    query: '',
    authority: 'gw.test',
    hostname: 'gw.test',
    scheme: 'http',
    headers: {},
    sourceAddress: '127.0.0.1',
    externalOrigin: 'http://gw.test',
    requestId: 'req-1',
    sourcePort: 1,
    route: { name: 'r', key: 'l/r', listener: 'l', bind: 0 },
    matchedPrefix: '',
    originalUrl: '/',
    startTime: Date.now(),
    signal: new AbortController().signal,
    protocol: 'http',
    body: undefined,
    bufferBody: () => Promise.resolve(Buffer.alloc(0)),
    peekBody: () => Promise.resolve(Buffer.alloc(0)),
    copyBody: () => Promise.resolve(Buffer.alloc(0)),
    readBodyInto: (_limit, receiver) => receiver.bodyRead(Buffer.alloc(0)),
    setBody: () => undefined,
    get: () => undefined as never,
    set: () => undefined,
    queueResponseHeader: () => undefined,
    logField: () => undefined,
    detach: () => ex,
  };
  return ex;
}
