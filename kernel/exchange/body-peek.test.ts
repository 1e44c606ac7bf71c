// The request body reader behind `Exchange.peekBody` (ADR 0142), on node:http's own IncomingMessage from a real client:
// a body within the limit is read whole; past it, what was read is put back and the rest is left on the wire, so the
// next reader gets every byte in order and the socket is not drained meanwhile.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { createServer, request } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect } from 'node:net';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { after, before, describe, it } from 'node:test';
import { GatewayError } from '../sdk/index.ts';
import { copyRequestBody, peekRequestBody, readOrPutBack } from './body-peek.ts';
import { readBody } from './body-read.ts';

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

const sha256 = (b: Buffer): string => createHash('sha256').update(b).digest('hex');
const pattern = (n: number): Buffer => Buffer.from(Array.from({ length: n }, (_, i) => (i * 7 + (i >> 8)) & 0xff));

function readAll(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

describe('readOrPutBack and peekRequestBody', () => {
  let server: Server;
  let port: number;
  let handle: Handler = () => undefined;

  before(async () => {
    server = createServer((req, res) => handle(req, res));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  /** Send `body` in `chunk`-byte writes (chunked unless `sized`); resolves with the answer's text. */
  function send(body: Buffer, chunk: number, sized = false): Promise<string> {
    return new Promise((resolve, reject) => {
      const req = request({ port, host: '127.0.0.1', method: 'POST', path: '/', headers: sized ? { 'content-length': body.length } : {} }, (res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c.toString()));
        res.on('end', () => resolve(text));
      });
      req.on('error', reject);
      for (let i = 0; i < body.length; i += chunk) req.write(body.subarray(i, i + chunk));
      req.end();
    });
  }

  /** Run `inspect` on the next request; its result is the answer. */
  function serve(inspect: (req: IncomingMessage) => Promise<string>): void {
    handle = (req, res) => {
      inspect(req).then(
        (text) => res.end(text),
        (err: Error) => res.end(`error: ${err.message}`),
      );
    };
  }

  it('a body within the limit is given whole, chunked or sized, one chunk or many; exactly the limit too', async () => {
    for (const [size, chunk, sized] of [[0, 1, false], [10, 10, false], [100_000, 3000, false], [100_000, 3000, true], [65_536, 65_536, false]] as const) {
      const body = pattern(size);
      serve(async (req) => {
        const got = await readOrPutBack(req, 100_000);
        return got === undefined ? 'past' : sha256(got);
      });
      assert.equal(await send(body, chunk, sized), sha256(body), `${size} bytes in ${chunk}-byte writes`);
    }
  });

  it('past the limit: undefined, and the next reader gets every byte in order', async () => {
    for (const [size, chunk, limit] of [[1_000_000, 16_384, 100_000], [200_001, 200_001, 200_000], [50_000, 7, 1000], [100_001, 50_000, 100_000]] as const) {
      const body = pattern(size);
      serve(async (req) => {
        const got = await readOrPutBack(req, limit);
        assert.equal(got, undefined);
        assert.ok(req.readableLength > 0, 'what was read waits in the stream');
        return sha256(await readAll(req));
      });
      assert.equal(await send(body, chunk), sha256(body), `${size} bytes in ${chunk}-byte writes, limit ${limit}`);
    }
  });

  it('past the limit the rest stays on the wire until it is read (back-pressure)', async () => {
    const body = pattern(32 * 1024 * 1024);
    let read = -1;
    serve(async (req) => {
      assert.equal(await readOrPutBack(req, 64 * 1024), undefined);
      await new Promise((r) => setTimeout(r, 300));
      read = req.socket.bytesRead;
      return sha256(await readAll(req));
    });
    assert.equal(await send(body, 65_536), sha256(body));
    assert.ok(read > 0 && read < 8 * 1024 * 1024, `${read} bytes were read off the socket while nobody read the body`);
  });

  it('a client that leaves mid-body is a 400', async () => {
    const failed = new Promise<unknown>((resolve) => {
      handle = (req) => void readOrPutBack(req, 1_000_000).then(resolve, resolve);
    });
    const req = request({ port, host: '127.0.0.1', method: 'POST', path: '/' });
    req.on('error', () => undefined);
    req.write(pattern(1000));
    setTimeout(() => req.destroy(), 100);
    const err = await failed;
    assert.ok(err instanceof GatewayError);
    assert.equal(err.status, 400);

  });

  it('peekRequestBody: a second peek waits for the first; one no larger than a passed limit reads nothing; a larger one reads again', async () => {
    const body = pattern(300_000);
    serve(async (req) => {
      const kept: Buffer[] = [];
      const keep = (b: Buffer): void => void kept.push(b);
      const [a, b] = await Promise.all([peekRequestBody(req, 100_000, keep), peekRequestBody(req, 50_000, keep)]);
      assert.equal(a, undefined);
      assert.equal(b, undefined);
      assert.equal(await peekRequestBody(req, 100_000, keep), undefined);
      const whole = await peekRequestBody(req, 1_000_000, keep);
      assert.equal(kept.length, 1);
      assert.equal(kept[0], whole);
      return sha256(whole!);
    });
    assert.equal(await send(body, 10_000), sha256(body));
  });

  /**
   * Heap held while `reader` holds 512 KiB sent in 1-byte chunks (not yet ended), and what it read once the body
   * ends. `consume` reads the stream as a forwarder would, for a reader that only watches it.
   */
  async function heldFor(reader: (req: IncomingMessage) => Promise<Buffer | undefined>, consume: boolean): Promise<{ held: number; body: Buffer | undefined }> {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const count = 512 * 1024;
    let result: Promise<Buffer | undefined> | undefined;
    let seen: IncomingMessage | undefined;
    handle = (req) => {
      seen = req;
      result = reader(req);
      if (consume) req.on('data', () => undefined);
    };
    gc();
    const before = process.memoryUsage().heapUsed;
    const socket = connect(port, '127.0.0.1');
    socket.on('error', () => undefined);
    socket.write(`POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n${'1\r\nx\r\n'.repeat(count)}`);
    // All of it parsed: the socket read whole (what is sent, less the final chunk's 5 bytes).
    const wire = 6 * count;
    for (let i = 0; i < 500 && !(seen && (seen.socket?.bytesRead ?? 0) >= wire); i++) await new Promise((r) => setTimeout(r, 10));
    await new Promise((r) => setImmediate(r));
    gc();
    const held = process.memoryUsage().heapUsed - before;
    socket.end('0\r\n\r\n');
    return { held, body: await result! };
  }

  const mib = (n: number): string => `${(n / 1024 / 1024).toFixed(1)} MiB held for 512 KiB`;

  it('a body in 1-byte chunks is held joined (as it came, 512 KiB took over 100 MiB): copyRequestBody, readOrPutBack, readBody', async () => {
    const copied = await heldFor((req) => copyRequestBody(req, 1024 * 1024), true);
    assert.equal(copied.body?.length, 512 * 1024);
    assert.ok(copied.body!.every((b) => b === 0x78));
    assert.ok(copied.held < 24 * 1024 * 1024, mib(copied.held));
    const peeked = await heldFor((req) => readOrPutBack(req, 2 * 1024 * 1024), false);
    assert.equal(peeked.body?.length, 512 * 1024);
    assert.ok(peeked.held < 24 * 1024 * 1024, mib(peeked.held));
    const read = await heldFor((req) => new Promise((resolve, reject) => readBody(req, 2 * 1024 * 1024, { bodyRead: resolve, bodyFailed: reject })), false);
    assert.equal(read.body?.length, 512 * 1024);
    assert.ok(read.body!.every((b) => b === 0x78));
    assert.ok(read.held < 24 * 1024 * 1024, mib(read.held));
  });
});
