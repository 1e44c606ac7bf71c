// What a retry lets the gateway spend: a failed answer's body handed to another backend's turn is not read for ever
// (ADR 0168), and a client's slow upload is not waited for when no retry will send it (ADR 0156).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createServer } from 'node:http';
import type { Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { oneListenerConfig, startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { RawClient } from './proxy-support.ts';

/** Writes to `res` for as long as it is open, counting the bytes the socket took. */
function endless(res: ServerResponse, counted: { bytes: number; closed: boolean }): void {
  const block = Buffer.alloc(64 * 1024, 0x61);
  res.on('close', () => (counted.closed = true));
  const more = (): void => {
    while (!res.destroyed) {
      counted.bytes += block.length;
      if (!res.write(block)) return void res.once('drain', more);
    }
  };
  more();
}

describe('retry bounds', () => {
  let gw: RunningGateway;
  let port: number;
  let upstream: Server;
  const failed = { bytes: 0, closed: false };
  let answered = 0;

  before(async () => {
    port = await freePort();
    upstream = createServer((req, res) => {
      req.resume();
      // The first answer is a 503 whose body never ends; the next one (the other backend) a plain 200.
      if (req.url === '/two/endless' && answered++ === 0) {
        res.writeHead(503, { 'content-type': 'text/plain' });
        return endless(res, failed);
      }
      req.on('end', () => res.end('ok'));
    });
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    const up = (upstream.address() as AddressInfo).port;
    gw = await startGateway(oneListenerConfig(port, [
      { name: 'two', matches: [{ path: { pathPrefix: '/two' } }], policies: { retry: { attempts: 1, codes: [503] } }, backends: [{ host: `127.0.0.1:${up}` }, { host: `localhost:${up}` }] },
      // No retry at all (attempts 0) and one refusing backend: nothing would send the body again.
      { name: 'refused', matches: [{ path: { pathPrefix: '/refused' } }], policies: { retry: { attempts: 0, codes: [] }, timeout: { streamIdleTimeout: '10s' } }, backends: [{ host: '127.0.0.1:1' }] },
    ]));
  });
  after(async () => {
    await gw.stop();
    upstream.closeAllConnections();
    await new Promise<void>((resolve) => upstream.close(() => resolve()));
  });

  it('a failed-over answer whose body never ends is let go, not read for ever (ADR 0168)', async () => {
    const res = await fetch(`http://127.0.0.1:${port}/two/endless`);
    assert.equal(res.status, 200);
    assert.equal(await res.text(), 'ok');
    await sleep(1_000);
    // Drained without a limit, the gateway read hundreds of MiB a second of it.
    assert.ok(failed.bytes < 8 * 1024 * 1024, `the upstream wrote ${failed.bytes} bytes of the failed answer`);
    assert.ok(failed.closed, 'its connection closed');
  });

  it('a refused last attempt answers at once, without waiting for a slow upload (ADR 0156)', async () => {
    const client = new RawClient(port);
    await client.connected;
    try {
      const started = performance.now();
      client.write('POST /refused/x HTTP/1.1\r\nHost: gw\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nfirst\r\n');
      const answer = await client.read({ ms: 5_000 });
      assert.equal(answer.status, 503, answer.body);
      assert.ok(performance.now() - started < 3_000, 'answered before the upload ended (it never does)');
    } finally {
      client.destroy();
    }
  });
});
