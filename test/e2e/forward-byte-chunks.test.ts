// An upstream answering in 1-byte chunk frames to a client that stopped reading, on routes that forward through the
// kernel's `forward()` rather than the direct forward: a route with `retry`, one with a per-attempt `timeout`
// (ADR 0156). undici's `request()` kept a Buffer per chunk up to its body's high-water mark and the client's response
// a write per chunk: 12.8 MiB for one answer (ADR 0153). In process, so the gateway's heap is this one.
import assert from 'node:assert/strict';
import { connect, createServer } from 'node:net';
import type { AddressInfo, Server, Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { oneListenerConfig, startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { heapGrowth, heapNow } from '../helpers/byte-chunk-upstream.ts';

describe('a streamed answer in 1-byte chunks to a client that stopped reading (ADR 0156)', () => {
  let upstream: Server;
  let gw: RunningGateway;
  let port: number;
  const sockets = new Set<Socket>();

  before(async () => {
    // Each byte a chunk frame of its own, written as fast as the gateway reads them, for as long as it does.
    const frames = Buffer.from('1\r\nx\r\n'.repeat(64 * 1024));
    upstream = createServer((socket) => {
      sockets.add(socket);
      socket.on('error', () => undefined);
      socket.once('data', () => {
        socket.write('HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nTransfer-Encoding: chunked\r\n\r\n');
        const more = (): void => {
          while (!socket.destroyed && socket.write(frames));
        };
        socket.on('drain', more);
        more();
      });
    });
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    const host = `127.0.0.1:${(upstream.address() as AddressInfo).port}`;
    port = await freePort();
    gw = await startGateway(oneListenerConfig(port, [
      { name: 'retry', matches: [{ path: { pathPrefix: '/retry' } }], policies: { retry: { attempts: 2, codes: [503] } }, backends: [{ host }] },
      { name: 'timeout', matches: [{ path: { pathPrefix: '/timeout' } }], policies: { timeout: { backendRequestTimeout: '30s' } }, backends: [{ host }] },
    ]));
  });
  after(async () => {
    await gw?.stop();
    for (const s of sockets) s.destroy();
    await new Promise<void>((resolve) => upstream.close(() => resolve()));
  });

  for (const path of ['/retry', '/timeout']) {
    it(`${path}: the answer backs up to the upstream with its small chunks joined`, async () => {
      // What the test before let go of is collected first.
      await new Promise((resolve) => setTimeout(resolve, 500));
      const before = heapNow();
      const client = connect(port, '127.0.0.1');
      client.on('error', () => undefined);
      client.write(`GET ${path} HTTP/1.1\r\nHost: gw\r\n\r\n`);
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
      // The client reads no more: the answer backs up to the upstream.
      const held = await heapGrowth(before);
      client.destroy();
      assert.ok(held < 4 * 1024 * 1024, `${(held / 1024 / 1024).toFixed(1)} MiB held by one answer the client does not read`);
    });
  }
});
