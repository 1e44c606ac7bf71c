// An upstream answer in 1-byte chunk frames (chunked framing, a raw `net` server) is held joined by every reader that
// keeps it in memory (ADR 0153), as client bodies are (ADR 0148): kept as it came, each byte was a Buffer of its own
// (some 200 bytes of heap), so 512 KiB held over 100 MiB. Heap is measured while the answer is still open.
import assert from 'node:assert/strict';
import { request } from 'node:http';
import type { IncomingMessage } from 'node:http';
import { createServer } from 'node:net';
import type { AddressInfo, Server, Socket } from 'node:net';
import type { Readable } from 'node:stream';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { after, before, describe, it } from 'node:test';
import { readCapped, readUpTo, tapCapped } from '../sdk/index.ts';
import type { Exchange, Reply } from '../sdk/index.ts';
import { H1Pool } from './h1-pool.ts';
import { PooledTarget } from './pooled-target.ts';
import { LazyPool } from './undici-core.ts';

const COUNT = 512 * 1024;
const LIMIT = 24 * 1024 * 1024;

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
const mib = (n: number): string => `${(n / 1024 / 1024).toFixed(1)} MiB held for 512 KiB`;
const settle = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('an upstream answer in 1-byte chunks is held joined', () => {
  let server: Server;
  let port: number;
  /** The open answer's socket: its last chunk is written by `finish`. */
  let open: Socket | undefined;
  let written: Promise<void> = Promise.resolve();

  before(async () => {
    server = createServer((socket) => {
      open = socket;
      socket.on('error', () => undefined);
      socket.once('data', () => {
        written = new Promise<void>((resolve) => {
          socket.write(`HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n${'1\r\nx\r\n'.repeat(COUNT)}`, () => resolve());
        });
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  after(async () => {
    open?.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  const finish = (): void => void open!.end('0\r\n\r\n');

  /** Heap held while `read` holds the open answer (every byte of it read off the wire), then what it read. */
  async function heldFor<T>(read: () => Promise<T>, wire: () => number): Promise<{ held: number; result: T }> {
    gc();
    const before = process.memoryUsage().heapUsed;
    const result = read();
    await settle(50);
    await written;
    for (let i = 0; i < 500 && wire() < 6 * COUNT; i++) await settle(10);
    // Read off the wire is not yet parsed: wait until the heap stops growing.
    let held = 0;
    for (let i = 0; i < 50; i++) {
      await settle(100);
      gc();
      const now = process.memoryUsage().heapUsed - before;
      if (i > 0 && Math.abs(now - held) < 512 * 1024) break;
      held = now;
    }
    finish();
    return { held, result: await result };
  }

  /** The answer as node:http's client gives it (how plugins fetch JWKS, OpenAPI documents, guard answers). */
  function get(): Promise<IncomingMessage> {
    return new Promise((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port, path: '/', agent: false }, resolve);
      req.on('error', reject);
      req.end();
    });
  }

  async function heldByReader(reader: (res: Readable) => Promise<Buffer | undefined>): Promise<{ held: number; body: Buffer | undefined }> {
    let res: IncomingMessage | undefined;
    const { held, result } = await heldFor(
      async () => {
        res = await get();
        return reader(res);
      },
      () => res?.socket?.bytesRead ?? 0,
    );
    return { held, body: result };
  }

  const check = (name: string, got: { held: number; body: Buffer | undefined }): void => {
    assert.equal(got.body?.length, COUNT, name);
    assert.ok(got.body!.every((b) => b === 0x78), name);
    assert.ok(got.held < LIMIT, `${name}: ${mib(got.held)}`);
  };

  it('readCapped, readUpTo and tapCapped (the readers of plugins: MCP targets, LLM guards, JWKS, OpenAPI)', async () => {
    check('readCapped', await heldByReader((res) => readCapped(res, 1024 * 1024)));
    check('readUpTo', await heldByReader(async (res) => (await readUpTo(res, 1024 * 1024)) as Buffer));
    check(
      'tapCapped',
      await heldByReader(
        (res) =>
          new Promise((resolve) => {
            tapCapped(res, 1024 * 1024, resolve).resume();
          }),
      ),
    );
  });

  it('an answer read whole by the kernel (`readWhole`, the lean client)', async () => {
    const h1 = new H1Pool('127.0.0.1', port);
    const undici = new LazyPool(() => {
      throw new Error('undici was asked for');
    });
    const target = new PooledTarget({ origin: `http://127.0.0.1:${port}` }, undici, undefined, undefined, h1);
    try {
      const { held, result } = await heldFor(
        () => target.forward(exchange(), undefined, { readWhole: 1024 * 1024 }),
        () => open?.bytesWritten ?? 0,
      );
      const body = (result as Reply).body;
      assert.ok(Buffer.isBuffer(body));
      check('readWhole', { held, body });
    } finally {
      await h1.destroy();
    }
  });
});

/** A plugin-made exchange over the SDK interface alone: a GET without a body. */
function exchange(): Exchange {
  const headers: Record<string, string> = {};
  const ex: Exchange = {
    req: undefined as never,
    method: 'GET',
    path: '/',
    query: '',
    authority: 'gw.test',
    hostname: 'gw.test',
    scheme: 'http',
    headers,
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
