import assert from 'node:assert/strict';
import { connect } from 'node:http2';
import type { ClientHttp2Session } from 'node:http2';
import { createServer } from 'node:net';
import type { AddressInfo, Server, Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { H2Sessions } from './h2-sessions.ts';

/** H2Sessions over cleartext sockets (the bind hands it TLS ones): `/hold` is never answered, anything else is. */
describe('H2Sessions: idle close and stalled bodies', () => {
  let server: Server;
  let port: number;
  let sessions: H2Sessions;

  before(async () => {
    sessions = new H2Sessions(
      (req, res) => {
        if (req.url === '/answered') res.writeHead(200).write('head and a byte');
        else if (req.url !== '/hold') res.end('ok');
      },
      () => 300,
      300,
    );
    server = createServer((socket: Socket) => sessions.accept(socket));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  /** A client session, and when it saw its connection end (ms after `since`), or undefined while open. */
  function open(): { client: ClientHttp2Session; closedAfter: () => number | undefined } {
    const since = performance.now();
    let closed: number | undefined;
    const client = connect(`http://127.0.0.1:${port}`);
    client.on('error', () => undefined);
    client.on('goaway', () => (closed ??= performance.now() - since));
    client.on('close', () => (closed ??= performance.now() - since));
    return { client, closedAfter: () => closed };
  }

  it('closes a session idle past its time (GOAWAY)', async () => {
    const { client, closedAfter } = open();
    await new Promise<void>((resolve, reject) => {
      const r = client.request({ ':path': '/' });
      r.on('error', reject);
      r.resume();
      r.on('end', resolve);
    });
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    const closed = closedAfter();
    client.destroy();
    assert.ok(closed !== undefined && closed >= 250, `closed after ${closed} ms`);
  });

  it('keeps a session whose stream is open, however quiet', async () => {
    const { client, closedAfter } = open();
    const r = client.request({ ':path': '/hold' });
    r.on('error', () => undefined);
    await new Promise((resolve) => setTimeout(resolve, 1_200));
    const closed = closedAfter();
    client.destroy();
    assert.equal(closed, undefined);
  });

  it('resets a stream whose body stalls before any answer; an answered one, or one whose body ended, stays', async () => {
    const { client } = open();
    const outcome = (path: string, end: boolean): Promise<string> =>
      new Promise((resolve) => {
        const r = client.request({ ':method': 'POST', ':path': path }, { endStream: false });
        r.on('error', () => undefined);
        r.write('part of a body');
        if (end) r.end();
        r.on('close', () => resolve(`reset ${r.rstCode}`));
        setTimeout(() => resolve('open'), 1_200);
      });
    try {
      const [stalled, answered, ended] = await Promise.all([outcome('/hold', false), outcome('/answered', false), outcome('/hold', true)]);
      assert.equal(stalled, 'reset 8');
      assert.equal(answered, 'open');
      assert.equal(ended, 'open');
    } finally {
      client.destroy();
    }
  });

  it('closeAll (drain) sends GOAWAY to every session', async () => {
    const { client, closedAfter } = open();
    await new Promise<void>((resolve) => client.once('remoteSettings', () => resolve()));
    sessions.closeAll();
    await new Promise((resolve) => setTimeout(resolve, 100));
    const closed = closedAfter();
    client.destroy();
    assert.ok(closed !== undefined && closed < 300, `closed after ${closed} ms`);
  });
});
