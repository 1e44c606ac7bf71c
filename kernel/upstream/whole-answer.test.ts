// `forward` with `readWhole` (or `rawHeaders`: a streamed answer) to a cleartext HTTP/1.1 origin goes through the lean
// client (ADR 0084), as the direct forward does (ADR 0073), with what undici's path gave: status, the raw header list,
// the body bytes whole (one read or many, Content-Length or chunked); a body over the limit (in the read that ends
// it, or before) is a stream failing with `BodyTooLargeError`; a request that fails before the answer rejects; a
// streamed body is read at the reader's pace, fails when the upstream breaks off, and destroyed closes the upstream
// connection. undici's pool is never made.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { BYTE_CHUNKS, heldMessage, startByteChunkUpstream } from '../../test/helpers/byte-chunk-upstream.ts';
import type { ByteChunkUpstream } from '../../test/helpers/byte-chunk-upstream.ts';
import { BodyTooLargeError, replyHeader } from '../sdk/index.ts';
import type { Exchange, Reply } from '../sdk/index.ts';
import { H1Pool } from './h1-pool.ts';
import { PooledTarget } from './pooled-target.ts';
import { LazyPool } from './undici-core.ts';

const CHAT = Buffer.from(JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }));
const ANSWER = JSON.stringify({ id: 'c1', model: 'm', choices: [], usage: { prompt_tokens: 1, completion_tokens: 2 } });

/** A plugin-made exchange over the SDK interface alone: a POST of `CHAT` to `path`. */
function exchange(path: string): Exchange {
  const headers: Record<string, string> = { 'content-type': 'application/json', 'content-length': String(CHAT.length) };
  let body: Buffer | undefined = CHAT;
  const ex: Exchange = {
    req: undefined as never,
    method: 'POST',
    path,
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
    originalUrl: path,
    startTime: Date.now(),
    signal: new AbortController().signal,
    protocol: 'http',
    get body() {
      return body;
    },
    bufferBody: () => Promise.resolve(body ?? Buffer.alloc(0)),
    peekBody: () => Promise.resolve(body ?? Buffer.alloc(0)),
    copyBody: () => Promise.resolve(body ?? Buffer.alloc(0)),
    readBodyInto: (_limit, receiver) => receiver.bodyRead(body ?? Buffer.alloc(0)),
    setBody(b) {
      body = b;
    },
    get: () => undefined as never,
    set: () => undefined,
    queueResponseHeader: () => undefined,
    logField: () => undefined,
    detach: () => ex,
  };
  return ex;
}

async function failure(body: Reply['body']): Promise<unknown> {
  assert.ok(body instanceof Readable, 'the body is a stream failing with the error');
  try {
    for await (const _ of body) void _;
  } catch (err) {
    return err;
  }
  assert.fail('the body did not fail');
}

describe('an answer read whole from a cleartext origin (lean client)', () => {
  let server: Server;
  let target: PooledTarget;
  let h1: H1Pool;
  let undiciMade = 0;
  const seen: string[] = [];
  let holdClosed: () => void = () => undefined;

  before(async () => {
    server = createServer((req: IncomingMessage, res: ServerResponse) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        seen.push(`${req.method} ${req.url} ${Buffer.concat(chunks).toString()}`);
        const big = 'x'.repeat(200);
        switch (req.url) {
          case '/one':
            // Head and body in one write: the lean client ends it with `onEnd`.
            res.writeHead(200, ['Content-Type', 'application/json', 'X-Up', 'a', 'Set-Cookie', 'a=1', 'Set-Cookie', 'b=2', 'Content-Length', String(ANSWER.length)]);
            return res.end(ANSWER);
          case '/chunked':
            res.writeHead(200, { 'content-type': 'application/json' });
            res.write(ANSWER.slice(0, 10));
            return setTimeout(() => res.end(ANSWER.slice(10)), 10);
          case '/split':
            res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(ANSWER.length) });
            res.write(ANSWER.slice(0, 10));
            return setTimeout(() => res.end(ANSWER.slice(10)), 10);
          case '/big-one':
            res.writeHead(200, { 'content-length': String(big.length) });
            return res.end(big);
          case '/big-split':
            res.writeHead(200, { 'content-length': String(big.length) });
            res.write(big.slice(0, 60));
            return setTimeout(() => res.end(big.slice(60)), 10);
          case '/big-last':
            // Under the limit until the read that ends it.
            res.writeHead(200, { 'content-length': String(big.length) });
            res.write(big.slice(0, 20));
            return setTimeout(() => res.end(big.slice(20)), 10);
          case '/stream': {
            // 64 chunks of 16 KiB, each written when the last one drained: the reader's pace reaches the upstream.
            res.writeHead(200, { 'content-type': 'text/event-stream' });
            let n = 0;
            const more = (): void => {
              while (n < 64) {
                n++;
                if (!res.write(`data: ${'y'.repeat(16 * 1024 - 8)}\n\n`)) return void res.once('drain', more);
              }
              res.end('data: [DONE]\n\n');
            };
            return more();
          }
          case '/stream-one':
            res.writeHead(200, { 'content-type': 'text/event-stream', 'content-length': '14' });
            return res.end('data: [DONE]\n\n');
          case '/stream-hold':
            res.writeHead(200, { 'content-type': 'text/event-stream' });
            res.write('data: 1\n\n');
            return void req.socket.once('close', () => holdClosed());
          case '/broken':
            res.writeHead(200, { 'content-length': '1000' });
            res.write('{"id":');
            return setTimeout(() => res.socket?.destroy(), 10);
          default:
            res.socket?.destroy();
        }
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    h1 = new H1Pool('127.0.0.1', port);
    const undici = new LazyPool(() => {
      undiciMade++;
      throw new Error('undici was asked for');
    });
    target = new PooledTarget({ origin: `http://127.0.0.1:${port}` }, undici, undefined, undefined, h1);
  });
  after(async () => {
    await h1.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  const forward = (path: string, limit = 1024): Promise<Reply> => target.forward(exchange(path), undefined, { readWhole: limit });

  it('reads a Content-Length answer in one read: status, raw headers in order, the body bytes', async () => {
    const reply = await forward('/one');
    assert.equal(reply.status, 200);
    assert.ok(Buffer.isBuffer(reply.body));
    assert.equal(reply.body.toString(), ANSWER);
    assert.equal(replyHeader(reply, 'content-type'), 'application/json');
    assert.equal(replyHeader(reply, 'x-up'), 'a');
    assert.deepEqual(reply.headers['set-cookie'], ['a=1', 'b=2']);
    assert.equal(reply.headers['content-length'], String(ANSWER.length));
    assert.equal(seen.at(-1), `POST /one ${CHAT.toString()}`);
  });

  it('reads a chunked answer and a Content-Length one split over reads whole', async () => {
    for (const path of ['/chunked', '/split']) {
      const reply = await forward(path);
      assert.equal(reply.status, 200);
      assert.ok(Buffer.isBuffer(reply.body), path);
      assert.equal(reply.body.toString(), ANSWER, path);
    }
  });

  it('fails the body with BodyTooLargeError over the limit: in one read, before the last read, in the last read', async () => {
    for (const path of ['/big-one', '/big-split', '/big-last']) {
      const reply = await forward(path, 50);
      assert.equal(reply.status, 200, path);
      assert.ok((await failure(reply.body)) instanceof BodyTooLargeError, path);
    }
    // The connection pool still serves.
    assert.equal(((await forward('/one')).body as Buffer).toString(), ANSWER);
  });

  it('fails the body when the upstream breaks off inside it, and rejects when it fails before the answer', async () => {
    const reply = await forward('/broken');
    assert.equal(reply.status, 200);
    assert.ok((await failure(reply.body)) instanceof Error);
    await assert.rejects(forward('/refused'), (err: { status?: number }) => err.status === 502);
  });

  const stream = (path: string): Promise<Reply> => target.forward(exchange(path), undefined, { rawHeaders: true });

  it('streams an answer at the reader’s pace (rawHeaders), its raw headers kept', async () => {
    const reply = await stream('/stream');
    assert.equal(reply.status, 200);
    assert.equal(replyHeader(reply, 'content-type'), 'text/event-stream');
    assert.ok(reply.body instanceof Readable);
    let size = 0;
    let text = '';
    for await (const chunk of reply.body) {
      size += (chunk as Buffer).length;
      text = (chunk as Buffer).toString('latin1').slice(-14);
      // A slow reader: the upstream waits for it (its writes drain only as this reads).
      if (size < 256 * 1024) await new Promise((r) => setTimeout(r, 1));
    }
    assert.equal(size, 64 * 16 * 1024 + 14);
    assert.equal(text, 'data: [DONE]\n\n');
    const one = await stream('/stream-one');
    assert.ok(one.body instanceof Readable);
    const parts: Buffer[] = [];
    for await (const chunk of one.body) parts.push(chunk as Buffer);
    assert.equal(Buffer.concat(parts).toString(), 'data: [DONE]\n\n');
  });

  it('a streamed body destroyed closes the upstream connection; one broken off fails', async () => {
    const closed = new Promise<void>((resolve) => (holdClosed = resolve));
    const reply = await stream('/stream-hold');
    assert.ok(reply.body instanceof Readable);
    reply.body.on('error', () => undefined);
    reply.body.destroy();
    await closed;
    const broken = await stream('/broken');
    assert.ok((await failure(broken.body)) instanceof Error);
  });

  it('never makes undici’s pool', () => {
    assert.equal(undiciMade, 0);
  });
});

describe('an answer in 1-byte chunks (ADR 0153)', () => {
  // Kept as it came, each byte was a Buffer of its own: 512 KiB read whole held 56 MiB, and a streamed body not yet
  // read 8 MiB. Heap is measured while the answer is still open.
  let upstream: ByteChunkUpstream;
  let h1: H1Pool;
  let target: PooledTarget;
  before(async () => {
    upstream = await startByteChunkUpstream();
    h1 = new H1Pool('127.0.0.1', upstream.port);
    const undici = new LazyPool(() => {
      throw new Error('undici was asked for');
    });
    target = new PooledTarget({ origin: upstream.origin }, undici, undefined, undefined, h1);
  });
  after(async () => {
    await h1.destroy();
    await upstream.close();
  });

  const check = (name: string, held: number, body: Buffer, limit: number): void => {
    assert.equal(body.length, BYTE_CHUNKS, name);
    assert.ok(body.every((b) => b === 0x78), name);
    assert.ok(held < limit, heldMessage(name, held));
  };

  it('read whole (`readWhole`): held joined', async () => {
    const { held, result } = await upstream.heldFor(() => target.forward(exchange('/'), undefined, { readWhole: 1024 * 1024 }));
    assert.ok(Buffer.isBuffer(result.body));
    check('readWhole', held, result.body, 24 * 1024 * 1024);
  });

  it('streamed (`rawHeaders`), not read yet: small chunks pushed joined, every byte in order', async () => {
    const { held, result } = await upstream.heldFor(() => target.forward(exchange('/'), undefined, { rawHeaders: true }));
    assert.ok(result.body instanceof Readable);
    const parts: Buffer[] = [];
    for await (const part of result.body) parts.push(part as Buffer);
    check('streamed', held, Buffer.concat(parts), 3 * 1024 * 1024);
    assert.ok(parts.length < 1000, `${parts.length} chunks for 512 KiB`);
  });
});
