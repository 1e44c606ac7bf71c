// A provider streaming its answer in 1-byte chunk frames to a client that does not read (ADR 0153): the gateway
// holds the stream's small chunks joined, not a Buffer per byte in the body and a write per byte to the client
// (one such stream held 11.8 MiB of heap; a stream of ordinary chunks is back-pressured at some 100 KiB). In process,
// so the gateway's heap is this one.
import assert from 'node:assert/strict';
import { connect, createServer } from 'node:net';
import type { AddressInfo, Server, Socket } from 'node:net';
import { after, before, it } from 'node:test';
import { startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { heapGrowth, heapNow } from '../helpers/byte-chunk-upstream.ts';

let provider: Server;
let gw: RunningGateway;
let port: number;
const sockets = new Set<Socket>();

before(async () => {
  // Newlines, each a chunk frame: to the SSE reader beside the stream, blank lines without an event.
  const frames = Buffer.from('1\r\n\n\r\n'.repeat(64 * 1024));
  provider = createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined);
    socket.once('data', () => {
      socket.write('HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n');
      const more = (): void => {
        while (!socket.destroyed && socket.write(frames));
      };
      socket.on('drain', more);
      more();
    });
  });
  await new Promise<void>((resolve) => provider.listen(0, '127.0.0.1', resolve));
  const hostOverride = `127.0.0.1:${(provider.address() as AddressInfo).port}`;
  port = await freePort();
  gw = await startGateway({
    binds: [{ port, listeners: [{ routes: [{ name: 'oa', backends: [{ ai: { name: 'oa', provider: { openAI: {} }, hostOverride } }] }] }] }],
  });
});
after(async () => {
  await gw?.stop();
  for (const s of sockets) s.destroy();
  await new Promise<void>((resolve) => provider.close(() => resolve()));
});

it('a stream the client does not read holds its 1-byte chunks joined', async () => {
  const before = heapNow();
  const client = connect(port, '127.0.0.1');
  client.on('error', () => undefined);
  const body = JSON.stringify({ model: 'gpt-4o', stream: true, messages: [{ role: 'user', content: 'hi' }] });
  client.write(`POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\nAuthorization: Bearer sk-test\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
  let head = '';
  await new Promise<void>((resolve) => {
    const onData = (c: Buffer): void => {
      head += c.toString('latin1');
      if (!head.includes('\r\n\r\n')) return;
      client.off('data', onData);
      client.pause();
      resolve();
    };
    client.on('data', onData);
  });
  assert.match(head, /^HTTP\/1\.1 200/);
  // The client reads no more: the stream backs up to the provider.
  const held = await heapGrowth(before);
  client.destroy();
  assert.ok(held < 4 * 1024 * 1024, `${(held / 1024 / 1024).toFixed(1)} MiB held by one stream the client does not read`);
});
