import assert from 'node:assert/strict';
import { Agent, createServer, get } from 'node:http';
import type { Server, ServerResponse } from 'node:http';
import { connect } from 'node:net';
import type { Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { announceKeepAlive, IDLE_CLOSE_MS, sweepIdle, trackSocket } from './idle-sweep.ts';
import type { SweptSocket } from './idle-sweep.ts';
import { startGatewayOnFreePorts } from '../../test/e2e/proxy-support.ts';
import { startUpstream } from '../../test/helpers/upstream.ts';

/** A node:http server as a bind runs it (`keepAliveTimeout: 0`): `/hold` answers only when told, `/ws` upgrades. */
async function server(): Promise<{ srv: Server; port: number; sockets: Set<SweptSocket>; held: ServerResponse[] }> {
  const sockets = new Set<SweptSocket>();
  const held: ServerResponse[] = [];
  const srv = createServer({ keepAliveTimeout: 0 }, (req, res) => {
    announceKeepAlive(res);
    if (req.url === '/hold') held.push(res);
    else res.end('ok');
  });
  srv.on('upgrade', (_req, socket: Socket) => socket.write('HTTP/1.1 101 Switching Protocols\r\nconnection: upgrade\r\nupgrade: test\r\n\r\n'));
  srv.on('connection', (socket: Socket) => {
    trackSocket(socket, 0);
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const address = srv.address();
  return { srv, port: typeof address === 'object' && address ? address.port : 0, sockets, held };
}

/** A client connection that sent `head` and read until `until` appears; resolves with it and what it read. */
async function client(port: number, head: string, until: string): Promise<{ socket: Socket; closed: Promise<void> }> {
  const socket = connect(port, '127.0.0.1');
  let text = '';
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  await new Promise<void>((resolve) => {
    socket.on('data', (c: Buffer) => {
      text += c.toString('latin1');
      if (text.includes(until)) resolve();
    });
    socket.write(head);
  });
  return { socket, closed };
}

const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('idle keep-alive connections closed by the sweep (node:http keepAliveTimeout 0)', () => {
  let s: Awaited<ReturnType<typeof server>>;
  before(async () => {
    s = await server();
  });
  after(() => {
    for (const res of s.held) res.end();
    s.srv.closeAllConnections();
    s.srv.close();
  });

  it('an idle connection is closed once quiet for the limit, not before; activity restarts the count', async () => {
    const idle = await client(s.port, 'GET / HTTP/1.1\r\nhost: x\r\n\r\n', 'ok');
    await tick();
    const socket = [...s.sockets].find((x) => x.remotePort === idle.socket.localPort)!;
    sweepIdle([socket], 1_000); // bytes moved since it connected: quiet from 1 s
    sweepIdle([socket], 1_000 + IDLE_CLOSE_MS - 1);
    assert.equal(socket.destroyed, false, 'not closed before the limit');
    // Another request: the count starts again.
    idle.socket.write('GET / HTTP/1.1\r\nhost: x\r\n\r\n');
    await new Promise<void>((resolve) => idle.socket.once('data', () => resolve()));
    sweepIdle([socket], 1_000 + IDLE_CLOSE_MS);
    assert.equal(socket.destroyed, false, 'a connection that moved bytes since the last sweep is not idle');
    sweepIdle([socket], 1_000 + 2 * IDLE_CLOSE_MS);
    assert.equal(socket.destroyed, true);
    await idle.closed;
  });

  it('a connection whose response is still being written, or one upgraded, is never closed by the sweep', async () => {
    const busy = connect(s.port, '127.0.0.1');
    busy.write('GET /hold HTTP/1.1\r\nhost: x\r\n\r\n');
    while (s.held.length === 0) await tick();
    const upgraded = await client(s.port, 'GET /ws HTTP/1.1\r\nhost: x\r\nconnection: upgrade\r\nupgrade: test\r\n\r\n', '\r\n\r\n');
    await tick();
    const ours = [...s.sockets].filter((x) => x.remotePort === busy.localPort || x.remotePort === upgraded.socket.localPort);
    assert.equal(ours.length, 2);
    for (let t = 0; t <= 4; t++) sweepIdle(ours, t * IDLE_CLOSE_MS);
    for (const socket of ours) assert.equal(socket.destroyed, false);
    busy.destroy();
    upgraded.socket.destroy();
  });
});

describe('the gateway still tells clients its keep-alive timeout', () => {
  it('Keep-Alive: timeout=65 on a proxied answer (node:http keepAliveTimeout is 0 in the bind)', async () => {
    const up = await startUpstream();
    const { gw, ports } = await startGatewayOnFreePorts(1, ([port]) => ({
      binds: [{ port, listeners: [{ routes: [{ name: 'r', backends: [{ host: `127.0.0.1:${up.port}` }] }] }] }],
    }));
    try {
      const res = await new Promise<import('node:http').IncomingMessage>((resolve, reject) => get({ port: ports[0], host: '127.0.0.1', path: '/x', agent: new Agent({ keepAlive: true }) }, resolve).on('error', reject));
      res.resume();
      assert.equal(res.statusCode, 200);
      assert.equal(res.headers['keep-alive'], 'timeout=65');
      assert.equal(res.headers.connection, 'keep-alive');
      res.socket.destroy();
    } finally {
      await gw.stop();
      await up.close();
    }
  });
});
