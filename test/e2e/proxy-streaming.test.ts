import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { request } from 'undici';
import type { RunningGateway } from '../helpers/gateway.ts';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';
import { sha256, sleep, startGatewayOnFreePorts } from './proxy-support.ts';

const TWO_MB = 2 * 1024 * 1024;

describe('streaming bodies through a host route', () => {
  let gw: RunningGateway;
  let up: TestUpstream;
  let port: number;
  const download = randomBytes(TWO_MB);
  /** When the slow upstream wrote each chunk and when it ended (performance.now()). */
  const slow = { written: [] as number[], ended: 0 };
  const HUGE = 64 * 1024 * 1024;
  const huge = { written: 0 };

  before(async () => {
    up = await startUpstream((req, res, body) => {
      if (req.url === '/upload') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ length: body.length, sha256: sha256(body) }));
      } else if (req.url === '/download') {
        res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(download.length) });
        // Written in pieces so the gateway sees many chunks with backpressure.
        let at = 0;
        const next = (): void => {
          while (at < download.length) {
            const piece = download.subarray(at, at + 64 * 1024);
            at += piece.length;
            if (!res.write(piece)) return void res.once('drain', next);
          }
          res.end();
        };
        next();
      } else if (req.url === '/download-chunked') {
        res.writeHead(200, { 'content-type': 'application/octet-stream' });
        res.end(download);
      } else if (req.url === '/huge') {
        // 64 MiB, written only as fast as the gateway takes it.
        res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(HUGE) });
        const piece = Buffer.alloc(64 * 1024, 3);
        const next = (): void => {
          while (huge.written < HUGE) {
            huge.written += piece.length;
            if (!res.write(piece)) return void res.once('drain', next);
          }
          res.end();
        };
        next();
      } else if (req.url === '/slow') {
        res.writeHead(200, { 'content-type': 'text/plain' });
        let n = 0;
        const timer = setInterval(() => {
          n++;
          res.write(`chunk ${n}\n`);
          slow.written.push(performance.now());
          if (n === 5) {
            clearInterval(timer);
            res.end();
            slow.ended = performance.now();
          }
        }, 100);
        res.on('close', () => clearInterval(timer));
      } else {
        res.writeHead(404).end();
      }
    });
    ({ gw, ports: [port] } = await startGatewayOnFreePorts(1, ([port]) => ({ binds: [{ port, listeners: [{ routes: [{ name: 'stream', backends: [{ host: `127.0.0.1:${up.port}` }] }] }] }] })));
  });
  after(async () => {
    await gw?.stop();
    await up?.close();
  });

  it('a 2 MB request body (content-length) arrives intact upstream', async () => {
    const payload = randomBytes(TWO_MB);
    const res = await request(`${gw.url(port)}/upload`, { method: 'POST', body: payload });
    assert.equal(res.statusCode, 200);
    assert.deepEqual(await res.body.json(), { length: TWO_MB, sha256: sha256(payload) });
  });

  it('a 2 MB chunked request body (streamed by the client) arrives intact upstream', async () => {
    const payload = randomBytes(TWO_MB);
    async function* pieces() {
      for (let at = 0; at < payload.length; at += 100_000) {
        yield payload.subarray(at, at + 100_000);
        if (at % 500_000 === 0) await sleep(5);
      }
    }
    const res = await request(`${gw.url(port)}/upload`, { method: 'POST', body: Readable.from(pieces()) });
    assert.equal(res.statusCode, 200);
    assert.deepEqual(await res.body.json(), { length: TWO_MB, sha256: sha256(payload) });
    assert.equal(up.received.at(-1)!.headers['transfer-encoding'], 'chunked');
  });

  it('a 2 MB response body arrives intact at the client (content-length and chunked)', async () => {
    for (const path of ['/download', '/download-chunked']) {
      const res = await request(`${gw.url(port)}${path}`);
      assert.equal(res.statusCode, 200);
      if (path === '/download') assert.equal(res.headers['content-length'], String(TWO_MB));
      const got = Buffer.from(await res.body.arrayBuffer());
      assert.equal(got.length, TWO_MB, path);
      assert.equal(sha256(got), sha256(download), path);
    }
  });

  it('a slow chunked response reaches the client incrementally', async () => {
    slow.written.length = 0;
    slow.ended = 0;
    const res = await request(`${gw.url(port)}/slow`);
    assert.equal(res.statusCode, 200);
    const arrivals: number[] = [];
    let text = '';
    for await (const chunk of res.body) {
      arrivals.push(performance.now());
      text += (chunk as Buffer).toString();
    }
    assert.equal(text, 'chunk 1\nchunk 2\nchunk 3\nchunk 4\nchunk 5\n');
    assert.ok(slow.ended > 0);
    // Order, not speed: the first bytes were in the client's hands before the upstream had even written its last chunk.
    assert.ok(arrivals[0]! < slow.written[4]!, `first chunk at ${arrivals[0]}, upstream's last write at ${slow.written[4]}`);
    assert.ok(arrivals[0]! < slow.ended);
    assert.ok(arrivals.length >= 3, `expected the body in several pieces, got ${arrivals.length}`);
  });

  it('backpressure: a client that stops reading stops the upstream (the body is not buffered in the gateway)', async () => {
    huge.written = 0;
    const res = await request(`${gw.url(port)}/huge`);
    res.body.pause();
    await sleep(300);
    const writtenWhilePaused = huge.written;
    res.body.destroy();
    // Only socket and stream buffers (a few MiB on loopback) may sit between a paused client and the upstream.
    assert.ok(writtenWhilePaused < HUGE / 2, `upstream wrote ${writtenWhilePaused} of ${HUGE} bytes to a paused client`);
  });
});
