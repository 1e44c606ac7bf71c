// An upstream status outside 100-599 (RFC 9110 section 15) is no answer a client can read: the gateway answers 502,
// whichever client carried the attempt (the lean HTTP/1.1 client for plain upstreams, undici for TLS ones).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import type { AddressInfo, Socket } from 'node:net';
import { createServer } from 'node:tls';
import { after, before, describe, it } from 'node:test';
import { request } from 'undici';
import { startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { makeTestPki } from '../helpers/pki.ts';
import type { TestPki } from '../helpers/pki.ts';
import { startRawUpstream } from '../helpers/raw-upstream.ts';
import type { RawUpstream } from '../helpers/raw-upstream.ts';
import { h2Frame } from '../helpers/h2-frames.ts';

/** The answer for a request path `/<route>/<status>`: that status line, a 2-byte body. */
function answer(path: string): string {
  const status = path.split('/')[2] ?? '200';
  return `HTTP/1.1 ${status} Odd\r\ncontent-length: 2\r\ncontent-type: text/plain\r\n\r\nhi`;
}

interface TlsUpstream {
  readonly port: number;
  close(): Promise<void>;
}

/** A TLS server on 127.0.0.1 offering `alpn`, each connection handed to `serve`; `close` ends its connections. */
async function listenTls(pki: TestPki, alpn: string, serve: (socket: Socket) => void): Promise<TlsUpstream> {
  const sockets = new Set<Socket>();
  const server = createServer({ key: readFileSync(pki.serverKey), cert: readFileSync(pki.serverCert), ALPNProtocols: [alpn] }, (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    serve(socket);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    close() {
      for (const s of sockets) s.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

/** A TLS upstream that writes `answer(path)` as raw bytes for each request head. */
function startRawTlsUpstream(pki: TestPki): Promise<TlsUpstream> {
  return listenTls(pki, 'http/1.1', (socket) => {
    let pending = '';
    socket.on('data', (chunk: Buffer) => {
      pending += chunk.toString('latin1');
      for (let end = pending.indexOf('\r\n\r\n'); end !== -1; end = pending.indexOf('\r\n\r\n')) {
        const head = pending.slice(0, end);
        pending = pending.slice(end + 4);
        socket.write(answer(head.split(' ')[1]!));
      }
    });
  });
}

/**
 * A TLS upstream speaking h2 by hand (node:http2 refuses to send a status outside 100-599): every stream the client
 * opens is answered `:status` `status` (HPACK: literal without indexing, the static table's `:status` name) and ended.
 */
function startRawH2Upstream(pki: TestPki, status: string): Promise<TlsUpstream> {
  const headers = Buffer.concat([Buffer.from([0x08, status.length]), Buffer.from(status, 'latin1')]);
  return listenTls(pki, 'h2', (socket) => {
    socket.write(h2Frame(4, 0, 0));
    let pending = Buffer.alloc(0);
    let prefaced = false;
    socket.on('data', (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      if (!prefaced) {
        if (pending.length < 24) return;
        pending = pending.subarray(24);
        prefaced = true;
      }
      while (pending.length >= 9) {
        const length = pending.readUIntBE(0, 3);
        if (pending.length < 9 + length) return;
        const type = pending[3]!;
        const flags = pending[4]!;
        const stream = pending.readUInt32BE(5) & 0x7fffffff;
        pending = pending.subarray(9 + length);
        if (type === 4 && (flags & 1) === 0) socket.write(h2Frame(4, 1, 0));
        // HEADERS: answered with END_HEADERS | END_STREAM.
        if (type === 1) socket.write(h2Frame(1, 0x05, stream, headers));
      }
    });
  });
}

describe('upstream status outside 100-599', () => {
  let pki: TestPki;
  let tls: TlsUpstream;
  let plain: RawUpstream;
  const h2: Record<string, TlsUpstream> = {};
  let gw: RunningGateway;
  let port: number;

  before(async () => {
    pki = makeTestPki({ serverName: 'upstream.test', serverAltNames: ['DNS:upstream.test', 'IP:127.0.0.1'], label: 'status-range' });
    tls = await startRawTlsUpstream(pki);
    plain = await startRawUpstream((_method, path) => answer(path));
    for (const status of ['999', '42', '200']) h2[status] = await startRawH2Upstream(pki, status);
    port = await freePort();
    const tlsHost = `127.0.0.1:${tls.port}`;
    const route = (name: string, host: string, policies: Record<string, unknown> = {}) => ({ name, matches: [{ path: { pathPrefix: `/${name}/` } }], policies, backends: [{ host }] });
    const h2Routes = Object.entries(h2).map(([status, up]) => route(`h2-${status}`, `127.0.0.1:${up.port}`, { backendTLS: { root: pki.ca, alpn: ['h2'] } }));
    gw = await startGateway({
      binds: [
        {
          port,
          listeners: [
            {
              routes: [
                route('plain', plain.host),
                route('tls', tlsHost, { backendTLS: { root: pki.ca } }),
                // A retry policy reads the answer's status before relaying it (another undici handler).
                route('tls-retry', tlsHost, { backendTLS: { root: pki.ca }, retry: { attempts: 2, codes: [503] } }),
                ...h2Routes,
              ],
            },
          ],
        },
      ],
    });
  });

  after(async () => {
    await gw?.stop();
    await tls?.close();
    await plain?.close();
    for (const up of Object.values(h2)) await up.close();
    pki?.remove();
  });

  const get = async (path: string) => {
    const res = await request(`${gw.url(port)}${path}`);
    return { status: res.statusCode, text: await res.body.text() };
  };

  /** The status line the gateway answers a WebSocket upgrade of `path` with (the upstream declines it). */
  const upgrade = (path: string): Promise<string> =>
    new Promise((resolve, reject) => {
      const socket = connect(port, '127.0.0.1', () =>
        socket.write(`GET ${path} HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n`),
      );
      let got = '';
      socket.on('data', (d: Buffer) => {
        got += d.toString('latin1');
        if (got.includes('\r\n')) {
          socket.destroy();
          resolve(got.slice(0, got.indexOf('\r\n')));
        }
      });
      socket.on('error', reject);
    });

  it('an upgrade the upstream declines with 42 or 999 is answered 502; a 404 is relayed', async () => {
    for (const route of ['plain', 'tls']) {
      for (const code of ['042', '999']) assert.match(await upgrade(`/${route}/${code}`), /^HTTP\/1\.1 502 /, `${route} ${code}`);
      assert.match(await upgrade(`/${route}/404`), /^HTTP\/1\.1 404 /);
    }
  });

  it('HTTP/2 upstreams: a :status of 999 or 42 is answered 502; 200 passes', async () => {
    assert.equal((await get('/h2-200/x')).status, 200);
    for (const status of ['999', '42']) {
      const res = await get(`/h2-${status}/x`);
      assert.equal(res.status, 502, `${status}: ${res.text}`);
    }
  });

  for (const route of ['plain', 'tls', 'tls-retry']) {
    it(`${route}: 999, 600 and 42 from the upstream are answered 502; 200 and 599 pass`, async () => {
      for (const code of ['999', '600', '042']) {
        const res = await get(`/${route}/${code}`);
        assert.equal(res.status, 502, `${route} ${code}: ${res.text}`);
        assert.match(res.text, /upstream failed/);
      }
      assert.equal((await get(`/${route}/200`)).status, 200);
      assert.equal((await get(`/${route}/599`)).status, 599);
    });
  }
});
