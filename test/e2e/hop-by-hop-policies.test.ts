// The client's `Connection` header names headers of the client's hop only (RFC 9110 §7.6.1): they are removed from
// its request when it is received, before any policy runs, so it can never remove a header a policy added
// (requestHeaderModifier, ext-authz, transformations...), as Envoy does (ADR 0117). Headers that are hop-by-hop by
// definition (Connection, Keep-Alive, TE, Trailer, Transfer-Encoding, Upgrade, Proxy-Connection) never reach the
// upstream, whoever set them.
import assert from 'node:assert/strict';
import { createServer, connect } from 'node:net';
import type { AddressInfo, Server, Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { RunningGateway } from '../helpers/gateway.ts';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';
import { rawRequest, SERVER_SIDES, startGatewayOnFreePorts, within } from './proxy-support.ts';

const ADD = { requestHeaderModifier: { add: { 'x-hooked': '1' } } };
/** A policy that tries to send hop-by-hop headers upstream. */
const HOP_SETTER = { requestHeaderModifier: { set: { connection: 'x-hooked', 'keep-alive': 'timeout=1', te: 'trailers', trailer: 'x-sum', upgrade: 'h2c', 'proxy-connection': 'keep-alive', 'x-hooked': '1' } } };
const HOP_BY_HOP = ['keep-alive', 'te', 'trailer', 'upgrade', 'proxy-connection'];

/** An upstream that accepts every upgrade (101) and records each request head it got. */
async function startUpgradeUpstream(): Promise<{ port: number; heads: string[]; close(): Promise<void> }> {
  const heads: string[] = [];
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    let head = '';
    socket.on('data', (c: Buffer) => {
      head += c.toString('latin1');
      if (!head.includes('\r\n\r\n')) return;
      heads.push(head.slice(0, head.indexOf('\r\n\r\n')));
      head = '';
      socket.write('HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    heads,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/** The upgrade request's answer head, read until its blank line; the connection is then closed. */
function upgrade(port: number, head: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let got = '';
    socket.on('error', reject);
    socket.on('data', (c: Buffer) => {
      got += c.toString('latin1');
      if (got.includes('\r\n\r\n')) {
        socket.destroy();
        resolve(got.slice(0, got.indexOf('\r\n\r\n')));
      }
    });
    socket.write(`${head.replace(/\n/g, '\r\n')}\r\n\r\n`);
  });
}

for (const side of SERVER_SIDES) {
  describe(`a client's Connection header and the headers policies add (${side.name})`, () => {
    let gw: RunningGateway;
    let up: TestUpstream;
    let ws: Awaited<ReturnType<typeof startUpgradeUpstream>>;
    let port: number;

    before(async () => {
      up = await startUpstream();
      ws = await startUpgradeUpstream();
      const route = (name: string, extra: Record<string, unknown>, backend: Record<string, unknown> = { host: `127.0.0.1:${up.port}` }) => ({
        name,
        matches: [{ path: { pathPrefix: `/${name}` } }],
        ...extra,
        backends: [backend],
      });
      ({ gw, ports: [port] } = await startGatewayOnFreePorts(
        1,
        ([p]) => ({
          binds: [
            {
              port: p,
              listeners: [
                {
                  routes: [
                    // The direct forward after the route's hooks, after a backend's hooks, and the `forward()` path (a
                    // `timeout` policy turns the direct forward off).
                    route('hooked', { policies: ADD }),
                    route('backend-hooked', {}, { host: `127.0.0.1:${up.port}`, policies: ADD }),
                    route('forward-hooked', { policies: { ...ADD, timeout: { backendRequestTimeout: '10s' } } }),
                    route('hop-setter', { policies: HOP_SETTER }),
                    route('forward-hop-setter', { policies: { ...HOP_SETTER, timeout: { backendRequestTimeout: '10s' } } }),
                    route('ws', { policies: ADD }, { host: `127.0.0.1:${ws.port}` }),
                  ],
                },
              ],
            },
          ],
        }),
        { env: { ...process.env, ...side.env } },
      ));
    });
    after(async () => {
      await gw?.stop();
      await up?.close();
      await ws?.close();
    });

    const last = () => up.received[up.received.length - 1]!.headers;

    for (const path of ['/hooked/p2b', '/backend-hooked/p2b', '/forward-hooked/p2b']) {
      it(`\`Connection: close, x-hooked\` does not remove the header a policy added (${path})`, async () => {
        const res = await rawRequest(port, `GET ${path} HTTP/1.1\nHost: a\nConnection: close, x-hooked, x-client-hop\nX-Hooked: from-client\nX-Client-Hop: 1`);
        assert.equal(res.status, 200);
        const h = last();
        // The client's own x-hooked was its hop's (it named it in Connection): only the policy's reaches the upstream.
        assert.equal(h['x-hooked'], '1');
        assert.equal(h['x-client-hop'], undefined);
        assert.doesNotMatch(String(h.connection ?? ''), /hooked|client|close/i);
      });
    }

    it('the usual `Connection: keep-alive` and `close` change nothing', async () => {
      for (const connection of ['close', 'Close', 'keep-alive, close']) {
        const res = await rawRequest(port, `GET /hooked/ka HTTP/1.1\nHost: a\nConnection: ${connection}\nX-Kept: yes`);
        assert.equal(res.status, 200, connection);
        assert.equal(last()['x-hooked'], '1');
        assert.equal(last()['x-kept'], 'yes');
      }
    });

    for (const path of ['/hop-setter/x', '/forward-hop-setter/x']) {
      it(`a policy cannot send hop-by-hop headers upstream (${path})`, async () => {
        const res = await rawRequest(port, `GET ${path} HTTP/1.1\nHost: a\nConnection: close`);
        assert.equal(res.status, 200);
        const h = last();
        for (const name of HOP_BY_HOP) assert.equal(h[name], undefined, `${name} must not reach the upstream`);
        assert.doesNotMatch(String(h.connection ?? ''), /hooked/i);
        // The policy's own header stays: the policy's Connection was dropped, not obeyed.
        assert.equal(h['x-hooked'], '1');
      });
    }

    it('an upgrade keeps the header a policy added; the upstream gets `Connection: upgrade` only', async () => {
      const answer = await within(
        upgrade(port, 'GET /ws/chat HTTP/1.1\nHost: a\nConnection: Upgrade, x-hooked, x-client-hop\nUpgrade: websocket\nX-Hooked: from-client\nX-Client-Hop: 1\nSec-WebSocket-Version: 13\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ=='),
        5000,
        'upgrade answer',
      );
      assert.match(answer, /^HTTP\/1\.1 101 /);
      const head = ws.heads[ws.heads.length - 1]!.toLowerCase();
      assert.match(head, /\r\nx-hooked: 1(\r\n|$)/);
      assert.doesNotMatch(head, /x-hooked: from-client/);
      assert.doesNotMatch(head, /x-client-hop/);
      assert.match(head, /\r\nconnection: upgrade(\r\n|$)/);
      assert.match(head, /\r\nupgrade: websocket(\r\n|$)/);
    });
  });
}
