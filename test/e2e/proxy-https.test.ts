import assert from 'node:assert/strict';
import { readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import { connect } from 'node:tls';
import { after, before, describe, it } from 'node:test';
import { Agent, request } from 'undici';
import WebSocket, { WebSocketServer } from 'ws';
import type { RunningGateway } from '../helpers/gateway.ts';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';
import { startGatewayOnFreePorts, within } from './proxy-support.ts';
import { testTempDir } from '../helpers/temp-dir.ts';
import { selfSignedPair } from '../helpers/pki.ts';
import { connect as h2connect } from 'node:http2';

const selfSigned = selfSignedPair;

describe('HTTPS listener', () => {
  let dir: string;
  let gw: RunningGateway;
  let up: TestUpstream;
  let wsHttp: Server;
  let wss: WebSocketServer;
  let port: number;
  let ca: string;
  let agent: Agent;

  before(async () => {
    dir = testTempDir('switchyard-https-');
    const pair = selfSigned(dir, 'localhost');
    ca = readFileSync(pair.cert, 'utf8');
    agent = new Agent({ connect: { ca } });
    up = await startUpstream();
    wsHttp = createServer();
    wss = new WebSocketServer({ server: wsHttp });
    wss.on('connection', (ws) => ws.on('message', (d) => ws.send(`echo:${String(d)}`)));
    await new Promise<void>((resolve) => wsHttp.listen(0, '127.0.0.1', resolve));
    ({ gw, ports: [port] } = await startGatewayOnFreePorts(1, ([port]) => ({
      binds: [
        {
          port,
          listeners: [
            {
              protocol: 'HTTPS',
              tls: pair,
              routes: [
                { name: 'local', matches: [{ path: { exact: '/hello' } }], policies: { directResponse: { status: 200, body: 'hello over tls' } } },
                { name: 'ws', matches: [{ path: { pathPrefix: '/ws' } }], backends: [{ host: `127.0.0.1:${(wsHttp.address() as { port: number }).port}` }] },
                { name: 'proxied', backends: [{ host: `127.0.0.1:${up.port}` }] },
              ],
            },
          ],
        },
      ],
    })));
  });
  after(async () => {
    await agent?.close();
    await gw?.stop();
    await up?.close();
    for (const c of wss.clients) c.terminate();
    wss.close();
    await new Promise<void>((resolve) => wsHttp.close(() => resolve()));
    rmSync(dir, { recursive: true, force: true });
  });

  it('serves a local reply over TLS (certificate verified against the CA)', async () => {
    for (const host of ['localhost', '127.0.0.1']) {
      const res = await request(`https://${host}:${port}/hello`, { dispatcher: agent });
      assert.equal(res.statusCode, 200);
      assert.equal(await res.body.text(), 'hello over tls');
    }
  });

  it('proxies to a plain HTTP upstream with X-Forwarded-Proto https', async () => {
    const res = await request(`https://localhost:${port}/api/x?y=1`, { dispatcher: agent, method: 'POST', body: 'payload' });
    assert.equal(res.statusCode, 200);
    const echoed = (await res.body.json()) as { url: string; bodyLength: number };
    assert.equal(echoed.url, '/api/x?y=1');
    assert.equal(echoed.bodyLength, 7);
    const h = up.received.at(-1)!.headers;
    assert.equal(h['x-forwarded-proto'], 'https');
    assert.equal(h['x-forwarded-host'], `localhost:${port}`);
  });

  it('presents the configured certificate with SNI', async () => {
    const subject = await new Promise<string>((resolve, reject) => {
      const s = connect({ host: '127.0.0.1', port, servername: 'localhost', ca }, () => {
        const cn = s.getPeerCertificate().subject.CN;
        s.end();
        resolve(String(cn));
      });
      s.on('error', reject);
    });
    assert.equal(subject, 'localhost');
  });

  it('rejects a client that does not trust the certificate (it is really TLS, not plain HTTP)', async () => {
    await assert.rejects(request(`https://localhost:${port}/hello`), /self[- ]signed|certificate/i);
  });

  it('plain HTTP to the HTTPS port does not get a response', async () => {
    await assert.rejects(within(request(`http://127.0.0.1:${port}/hello`).then((r) => r.body.text()), 5000, 'plain HTTP'));
  });

  it('WebSocket over TLS (wss://) is proxied', async () => {
    const ws = new WebSocket(`wss://localhost:${port}/ws`, { ca });
    const reply = await within(
      new Promise<string>((resolve, reject) => {
        ws.on('open', () => ws.send('over tls'));
        ws.on('message', (d) => resolve(String(d)));
        ws.on('error', reject);
      }),
      5000,
      'wss echo',
    );
    ws.close();
    assert.equal(reply, 'echo:over tls');
  });
});

describe('HTTPS listeners selected by SNI (a Host of another listener: 421, ADR 0138)', () => {
  let dir: string;
  let gw: RunningGateway;
  let port: number;
  const cas: Record<string, string> = {};

  before(async () => {
    dir = testTempDir('switchyard-sni-');
    const a = selfSigned(dir, 'a.test');
    const b = selfSigned(dir, 'b.test');
    cas['a.test'] = readFileSync(a.cert, 'utf8');
    cas['b.test'] = readFileSync(b.cert, 'utf8');
    const reply = (body: string) => [{ policies: { directResponse: { status: 200, body } } }];
    ({ gw, ports: [port] } = await startGatewayOnFreePorts(1, ([port]) => ({
      binds: [
        {
          port,
          listeners: [
            { name: 'a', hostname: 'a.test', protocol: 'HTTPS', tls: a, routes: reply('listener a') },
            { name: 'b', hostname: 'b.test', protocol: 'HTTPS', tls: b, routes: reply('listener b') },
          ],
        },
      ],
    })));
  });
  after(async () => {
    await gw?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  /** One HTTP/1.1 request over TLS with the given SNI name; returns the certificate CN and the response body. */
  function get(servername: string, ca: string): Promise<{ cn: string; body: string }> {
    return new Promise((resolve, reject) => {
      const s = connect({ host: '127.0.0.1', port, servername, ca }, () => {
        const cn = String(s.getPeerCertificate().subject.CN);
        s.write(`GET / HTTP/1.1\r\nHost: ${servername}\r\nConnection: close\r\n\r\n`);
        let data = '';
        s.on('data', (c: Buffer) => (data += c.toString()));
        s.on('end', () => resolve({ cn, body: data.slice(data.indexOf('\r\n\r\n') + 4) }));
      });
      s.on('error', reject);
    });
  }

  for (const name of ['a.test', 'b.test']) {
    it(`SNI ${name} gets its own certificate and listener`, async () => {
      const res = await get(name, cas[name]!);
      assert.equal(res.cn, name);
      assert.equal(res.body, `listener ${name[0]}`);
    });
  }

  /** One request over TLS with SNI `servername` (or none) and Host `host`: the status line's code and the body. */
  function call(servername: string | undefined, host: string, upgrade = false): Promise<{ status: number; body: string }> {
    return new Promise((resolve, reject) => {
      const options = servername === undefined ? { host: '127.0.0.1', port, rejectUnauthorized: false } : { host: '127.0.0.1', port, servername, ca: cas[servername] };
      const s = connect(options, () => {
        const extra = upgrade ? 'Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n' : 'Connection: close\r\n';
        s.write(`GET / HTTP/1.1\r\nHost: ${host}\r\n${extra}\r\n`);
        let data = '';
        s.on('data', (c: Buffer) => {
          data += c.toString();
          if (upgrade && data.includes('\r\n\r\n') && /content-length: 0\r\n|\}$/.test(data)) s.end();
        });
        s.on('end', () => resolve({ status: Number(data.slice(9, 12)), body: data.slice(data.indexOf('\r\n\r\n') + 4) }));
      });
      s.on('error', reject);
    });
  }

  it('SNI a.test with Host b.test gets 421, not listener b (whose certificate the client never checked)', async () => {
    const res = await call('a.test', 'b.test');
    assert.equal(res.status, 421);
    assert.match(res.body, /misdirected_request/);
    assert.doesNotMatch(res.body, /listener b/);
  });

  it('an upgrade with SNI a.test and Host b.test gets 421 too', async () => {
    const res = await within(call('a.test', 'b.test', true), 5_000, 'upgrade');
    assert.equal(res.status, 421);
  });

  it('over HTTP/2 a connection to a.test reused for b.test (coalescing) gets 421 on that stream, a.test still served', async () => {
    const session = h2connect('https://a.test', { ca: cas['a.test'], servername: 'a.test', host: '127.0.0.1', port } as Parameters<typeof h2connect>[1]);
    session.on('error', () => undefined);
    const ask = (authority: string): Promise<{ status: number; body: string }> =>
      new Promise((resolve, reject) => {
        const stream = session.request({ ':path': '/', ':authority': authority });
        let status = 0;
        let body = '';
        stream.on('response', (h) => (status = Number(h[':status'])));
        stream.on('data', (c: Buffer) => (body += c.toString()));
        stream.on('end', () => resolve({ status, body }));
        stream.on('error', reject);
      });
    try {
      const other = await ask('b.test');
      assert.equal(other.status, 421);
      assert.match(other.body, /misdirected_request/);
      assert.deepEqual(await ask('a.test'), { status: 200, body: 'listener a' });
    } finally {
      session.destroy();
    }
  });

  it('SNI and Host alike are served; a Host no listener serves is still 404; without SNI the Host chooses', async () => {
    assert.deepEqual(await call('a.test', 'a.test'), { status: 200, body: 'listener a' });
    assert.deepEqual(await call('b.test', 'B.TEST:' + port), { status: 200, body: 'listener b' });
    assert.equal((await call('a.test', 'zzz.test')).status, 404);
    assert.deepEqual(await call(undefined, 'b.test'), { status: 200, body: 'listener b' });
  });
});

describe('HTTPS listener: stopping the gateway', () => {
  it('a request in flight over TLS when the gateway stops is answered (drain), not cut', async () => {
    const dir = testTempDir('switchyard-https-drain-');
    const pair = selfSigned(dir, 'localhost');
    let arrived!: () => void;
    const atUpstream = new Promise<void>((resolve) => (arrived = resolve));
    const slow = createServer((_req, res) => {
      arrived();
      setTimeout(() => res.end('late'), 400);
    });
    await new Promise<void>((resolve) => slow.listen(0, '127.0.0.1', resolve));
    const slowPort = (slow.address() as { port: number }).port;
    const { gw, ports } = await startGatewayOnFreePorts(1, ([port]) => ({
      binds: [{ port, listeners: [{ protocol: 'HTTPS', tls: pair, routes: [{ name: 'slow', backends: [{ host: `127.0.0.1:${slowPort}` }] }] }] }],
    }));
    const agent = new Agent({ connect: { ca: readFileSync(pair.cert, 'utf8') } });
    try {
      const pending = request(`https://localhost:${ports[0]}/x`, { dispatcher: agent });
      await atUpstream;
      const stopping = gw.stop();
      const res = await pending;
      assert.equal(res.statusCode, 200);
      assert.equal(await res.body.text(), 'late');
      await stopping;
    } finally {
      await gw.stop();
      await agent.close();
      await new Promise<void>((resolve) => slow.close(() => resolve()));
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
