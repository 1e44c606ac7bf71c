import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { Socket } from 'node:net';
import { serveDeclinedUpgrade } from '../../kernel/runtime/declined-upgrade.ts';
import { RawClient, values } from '../e2e/proxy-support.ts';

// A server without `shouldUpgradeCallback`, as on Node before 22.21 / 24.9: every Upgrade reaches the 'upgrade' event.
async function withServer(run: (port: number, served: string[]) => Promise<void>): Promise<void> {
  const served: string[] = [];
  const server = createServer();
  server.on('upgrade', (req, socket) =>
    serveDeclinedUpgrade(req, socket as Socket, (res) => {
      served.push(`${req.method} ${req.url}`);
      res.setHeader('content-type', 'text/plain');
      res.end(`plain ${req.url}`);
    }),
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    await run((server.address() as { port: number }).port, served);
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
}

describe('an upgrade node:http hands over although shouldUpgrade declines it (ADR 0092)', () => {
  it('h2c without a body: served as a plain request, then the connection closes; nothing behind it runs', async () => {
    await withServer(async (port, served) => {
      const c = new RawClient(port);
      await c.connected;
      c.write('GET /h2c HTTP/1.1\r\nHost: h\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\nGET /behind HTTP/1.1\r\nHost: h\r\n\r\n');
      const a = await c.read();
      assert.equal(a.status, 200);
      assert.equal(a.body, 'plain /h2c');
      assert.deepEqual(values(a, 'connection'), ['close']);
      await c.closed();
      assert.deepEqual(served, ['GET /h2c']);
    });
  });

  it('an upgrade with a body: 400 in the gateway error shape, connection closed, nothing served', async () => {
    await withServer(async (port, served) => {
      const c = new RawClient(port);
      await c.connected;
      c.write('POST /up HTTP/1.1\r\nHost: h\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nContent-Length: 5\r\n\r\nhello');
      const a = await c.read();
      assert.equal(a.status, 400);
      assert.equal(JSON.parse(a.body).error.type, 'bad_request');
      await c.closed();
      assert.deepEqual(served, []);
    });
  });
});
