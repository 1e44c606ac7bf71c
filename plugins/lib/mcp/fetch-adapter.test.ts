// The fetch the MCP SDK's client transports use reads an MCP target's answers with a bound (docs/security.md "Bounded
// reads of what a peer sends"): the SDK reads them with `text()`/`json()` and event streams with a parser that keeps
// a line without end. A real HTTP server on 127.0.0.1; the target is a thin `UpstreamTarget` over node:http.
import assert from 'node:assert/strict';
import { createServer, request } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { once } from 'node:events';
import { after, before, test } from 'node:test';
import type { UpstreamCallOptions, UpstreamResponse, UpstreamTarget } from 'switchyard/sdk';
import { BYTE_CHUNKS, heldMessage, startByteChunkUpstream } from '../../../test/helpers/byte-chunk-upstream.ts';
import { fetchOverTarget } from './fetch-adapter.ts';

const MiB = 1024 * 1024;
let server: Server;
let origin: string;
const closedEarly: string[] = [];

/** Write `total` bytes of `piece` (as fast as the socket drains), then end; notes a connection closed before that. */
function pump(req: IncomingMessage, res: ServerResponse, piece: Buffer, total: number): void {
  let left = Math.ceil(total / piece.length);
  const go = (): void => {
    while (left > 0 && !res.destroyed) {
      left--;
      if (!res.write(piece)) return;
    }
    if (left === 0 && !res.writableEnded) res.end();
  };
  res.on('drain', go);
  res.on('close', () => left > 0 && closedEarly.push(req.url!));
  go();
}

before(async () => {
  server = createServer((req, res) => {
    if (req.url === '/huge-error') {
      res.writeHead(500, { 'content-type': 'application/json' });
      return pump(req, res, Buffer.alloc(MiB, 'x'), 40 * MiB);
    }
    if (req.url === '/endless-line') {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: ');
      return pump(req, res, Buffer.alloc(MiB, 'x'), 40 * MiB);
    }
    if (req.url === '/endless-event') {
      // Short lines, but no blank line: one event the SDK's parser would keep adding to.
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      return pump(req, res, Buffer.from(`data: ${'z'.repeat(1000)}\r\n`.repeat(1000)), 40 * MiB);
    }
    if (req.url === '/split-ends') {
      // 40 MiB of 1 MiB events whose blank line (CRLF line ends) spans two writes.
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      return pump(req, res, Buffer.from(`\r\ndata: ${'w'.repeat(MiB - 10)}\r\n`), 40 * MiB);
    }
    if (req.url === '/many-lines') {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      return pump(req, res, Buffer.from(`data: ${'y'.repeat(1000)}\n\n`.repeat(1000)), 40 * MiB);
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"jsonrpc":"2.0","id":1,"result":{}}');
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  origin = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
});
after(() => new Promise<void>((resolve) => server.close(() => resolve())));

/** The little of `UpstreamTarget` the fetch uses: its origin and `request`, over node:http. */
function target(to = origin): UpstreamTarget {
  const call = (opts: UpstreamCallOptions): Promise<UpstreamResponse> =>
    new Promise((resolve, reject) => {
      const req = request(`${to}${opts.path}`, { method: opts.method, headers: opts.headers as Record<string, string> }, (res) =>
        resolve({ status: res.statusCode!, headers: res.headers, body: res }),
      );
      req.on('error', reject);
      req.end(typeof opts.body === 'string' || opts.body instanceof Uint8Array ? opts.body : undefined);
    });
  return { origin: to, request: call } as unknown as UpstreamTarget;
}

test('an answer under the cap reads as it is', async () => {
  const res = await fetchOverTarget(target())(`${origin}/small`, { method: 'POST', body: '{}' });
  assert.deepEqual(await res.json(), { jsonrpc: '2.0', id: 1, result: {} });
});

test('an error answer larger than 32 MiB: text() fails saying so, the connection is closed', async () => {
  const res = await fetchOverTarget(target())(`${origin}/huge-error`, { method: 'POST', body: '{}' });
  assert.equal(res.status, 500);
  await assert.rejects(res.text(), /the MCP target's answer is larger than 32 MiB/);
  for (let i = 0; i < 100 && !closedEarly.includes('/huge-error'); i++) await new Promise((r) => setTimeout(r, 20));
  assert.ok(closedEarly.includes('/huge-error'), 'the upstream connection was closed before its end');
});

test('an event stream: an event past 32 MiB fails the stream, one line or many; 40 MiB of short events read whole', async () => {
  const endless = await fetchOverTarget(target())(`${origin}/endless-line`);
  await assert.rejects(endless.text(), /event stream sent an event longer than 32 MiB/);
  const event = await fetchOverTarget(target())(`${origin}/endless-event`);
  await assert.rejects(event.text(), /event stream sent an event longer than 32 MiB/);
  const split = await fetchOverTarget(target())(`${origin}/split-ends`);
  assert.ok((await split.text()).length >= 40 * MiB);
  const many = await fetchOverTarget(target())(`${origin}/many-lines`);
  const reader = many.body!.getReader();
  let bytes = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    bytes += value.byteLength;
  }
  assert.ok(bytes >= 40 * MiB, `read ${bytes} bytes`);
});

test('an answer in 1-byte chunks is handed on joined: text()/json() do not keep a view per byte (ADR 0153)', async () => {
  for (const type of ['application/json', 'text/event-stream']) {
    const upstream = await startByteChunkUpstream(type);
    try {
      const { held, result } = await upstream.heldFor(async () => {
        const res = await fetchOverTarget(target(upstream.origin))(`${upstream.origin}/mcp`, { method: 'POST', body: '{}' });
        return res.text();
      });
      assert.equal(result, 'x'.repeat(BYTE_CHUNKS), type);
      assert.ok(held < 24 * MiB, heldMessage(type, held));
    } finally {
      await upstream.close();
    }
  }
});
