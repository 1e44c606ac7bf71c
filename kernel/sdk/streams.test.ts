import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, request } from 'node:http';
import type { IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PassThrough, Readable } from 'node:stream';
import { describe, it } from 'node:test';
import { BodyTooLargeError, discardBody, pipeWithTeardown, readCapped, readCappedText, readUpTo, tap, tapCapped } from './streams.ts';
import { SseParser } from './sse.ts';
import { SseWriter } from './sse-writer.ts';

/** A real HTTP server sending `chunks` slowly, and a response from it. */
async function serve(chunks: readonly string[], onClose?: () => void): Promise<{ res: IncomingMessage; stop: () => Promise<void> }> {
  const server = createServer((_req, res) => {
    res.on('close', () => onClose?.());
    res.writeHead(200, { 'content-type': 'text/plain' });
    let i = 0;
    const next = (): void => {
      if (res.destroyed) return;
      if (i === chunks.length) return void res.end();
      res.write(chunks[i++]);
      setTimeout(next, 2);
    };
    next();
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  const req = request({ host: '127.0.0.1', port, path: '/' });
  req.end();
  const [res] = (await once(req, 'response')) as [IncomingMessage];
  return {
    res,
    stop: async () => {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}

describe('readCapped', () => {
  it('reads a body up to its cap, from strings, buffers and byte arrays', async () => {
    assert.equal((await readCapped(Readable.from([Buffer.from('ab'), 'cd', new Uint8Array([101])]), 5)).toString(), 'abcde');
    assert.equal(await readCappedText(Readable.from([]), 0), '');
  });

  it('past the cap, rejects and destroys the body so the upstream sees the connection go', async () => {
    let upstreamClosed = false;
    const { res, stop } = await serve(['x'.repeat(100), 'y'.repeat(100), 'z'.repeat(100), 'never sent'.repeat(1000)], () => (upstreamClosed = true));
    try {
      await assert.rejects(readCapped(res, 150), (err) => err instanceof BodyTooLargeError && err.limit === 150 && /larger than 150 bytes/.test(err.message));
      assert.equal(res.destroyed, true);
      for (let i = 0; i < 100 && !upstreamClosed; i++) await new Promise((r) => setTimeout(r, 10));
      assert.equal(upstreamClosed, true);
    } finally {
      await stop();
    }
  });

  it('rejects with the caller’s own error, a stream error, or an early close', async () => {
    await assert.rejects(readCapped(Readable.from(['abc']), 2, { tooLarge: (n) => new Error(`answer over ${n}`) }), /answer over 2/);
    const failing = new PassThrough();
    const p = readCapped(failing, 10);
    failing.destroy(new Error('boom'));
    await assert.rejects(p, /boom/);
    const closing = new PassThrough();
    const q = readCapped(closing, 10);
    closing.write('a');
    closing.destroy();
    await assert.rejects(q, /closed before its end/);
  });
});

describe('pipeWithTeardown and tap', () => {
  it('an error of the source destroys the destination with it', async () => {
    const src = new PassThrough();
    const dst = pipeWithTeardown(src, new PassThrough());
    src.destroy(new Error('upstream reset'));
    const [err] = (await once(dst, 'error')) as [Error];
    assert.match(err.message, /upstream reset/);
  });

  it('the destination closing early (the client left) destroys the source', async () => {
    const src = new PassThrough();
    const dst = pipeWithTeardown(src, new PassThrough());
    src.write('a');
    dst.destroy();
    await once(src, 'close');
    assert.equal(src.destroyed, true);
  });

  it('tap passes chunks on as they come, sees each, and a throwing observer does not break the body', async () => {
    const seen: string[] = [];
    let ended = false;
    const out = tap(Readable.from(['a', 'b', 'c'].map((s) => Buffer.from(s))), {
      chunk: (c) => {
        seen.push(c.toString());
        if (c.toString() === 'b') throw new Error('observer bug');
      },
      end: () => (ended = true),
    });
    assert.equal(await readCappedText(out, 100), 'abc');
    assert.deepEqual(seen, ['a', 'b', 'c']);
    assert.equal(ended, true);
  });

  it('tapCapped hands over the body when it fits and undefined when it did not', async () => {
    let small: Buffer | undefined;
    await readCapped(tapCapped(Readable.from([Buffer.from('ab'), Buffer.from('cd')]), 4, (b) => (small = b)), 100);
    assert.equal(small?.toString(), 'abcd');
    let large: Buffer | undefined = Buffer.from('sentinel');
    assert.equal((await readCapped(tapCapped(Readable.from([Buffer.from('abc'), Buffer.from('de')]), 4, (b) => (large = b)), 100)).toString(), 'abcde');
    assert.equal(large, undefined);
  });
});

describe('discardBody', () => {
  it('a body paused on purpose is still read (short) or destroyed (past the limit), not left hanging', async () => {
    // Adding a data listener does not resume a stream paused by pause(): it was never read nor destroyed.
    const short = new PassThrough();
    short.pause();
    short.end(Buffer.alloc(10));
    discardBody(short);
    await once(short, 'end');
    const long = new PassThrough();
    long.pause();
    long.write(Buffer.alloc(64));
    long.write(Buffer.alloc(64));
    discardBody(long, 100);
    await once(long, 'close');
    assert.ok(long.destroyed);
  });

  it('a body trickling under the byte limit is destroyed at the time limit', async () => {
    const slow = new PassThrough();
    const drip = setInterval(() => slow.write('x'), 10);
    try {
      discardBody(slow, 1024, 100);
      await once(slow, 'close');
      assert.ok(slow.destroyed);
    } finally {
      clearInterval(drip);
    }
  });
});

describe('SseWriter', () => {
  it('writes events a client parses, and reports the close when the client leaves', async () => {
    const writer = new SseWriter();
    const events: string[] = [];
    const parser = new SseParser({ onEvent: (e) => events.push(`${e.event ?? ''}|${e.id ?? ''}|${e.data}`) });
    writer.body.on('data', (c: Buffer) => parser.push(c));
    assert.equal(writer.send({ event: 'message', id: '1', data: '{"a":1}' }), true);
    writer.comment('keep-alive');
    writer.send({ data: 'two\nlines' });
    writer.end();
    await once(writer.body, 'end');
    parser.end();
    assert.deepEqual(events, ['message|1|{"a":1}', '|1|two\nlines']);
    assert.equal(writer.send({ data: 'late' }), false, 'writes after the end are dropped');
  });

  it('is bounded: a client that does not read gets its stream cut instead of the gateway buffering', () => {
    const writer = new SseWriter({ maxBuffered: 1024 });
    let closed = false;
    writer.onClose = () => (closed = true);
    let sent = 0;
    while (writer.send({ data: 'x'.repeat(100) })) sent++;
    assert.ok(sent >= 1 && sent < 20, `sent ${sent}`);
    assert.equal(writer.open, false);
    return new Promise<void>((resolve) => setImmediate(() => (assert.equal(closed, true), resolve())));
  });

  it('one event larger than the bound goes when nothing waits; the next one, while it waits, cuts the stream', async () => {
    const writer = new SseWriter({ maxBuffered: 1024 });
    assert.equal(writer.send({ data: 'x'.repeat(5000) }), true);
    assert.equal(writer.open, true);
    assert.equal(writer.send({ data: 'y' }), false, 'the client has not taken the large event yet');
    assert.equal(writer.open, false);
    // Taken by the client, a large event leaves room for the next.
    const reader = new SseWriter({ maxBuffered: 1024 });
    const chunks: Buffer[] = [];
    reader.body.on('data', (c: Buffer) => chunks.push(c));
    assert.equal(reader.send({ data: 'x'.repeat(5000) }), true);
    await new Promise((r) => setImmediate(r));
    assert.equal(reader.send({ data: 'x'.repeat(5000) }), true);
    reader.end();
    await once(reader.body, 'end');
    assert.equal(Buffer.concat(chunks).toString().length, 2 * (5000 + 'data: \n\n'.length));
  });
});
