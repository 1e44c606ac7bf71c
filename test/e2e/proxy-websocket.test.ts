import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { IncomingHttpHeaders, Server } from 'node:http';
import { once } from 'node:events';
import { createServer as createNetServer } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { request } from 'undici';
import WebSocket, { WebSocketServer } from 'ws';
import { oneListenerConfig } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';
import { RawClient, sleep, startGatewayOnFreePorts, waitFor, within } from './proxy-support.ts';

interface Client {
  readonly ws: WebSocket;
  /** Next message, text or binary; messages are queued from the start (the welcome can arrive with the 101). */
  next(): Promise<{ data: Buffer; isBinary: boolean }>;
  text(): Promise<string>;
}

/** Open a client WebSocket; resolves once open, rejects on error or an HTTP answer other than 101. */
function openSocket(url: string, headers: Record<string, string> = {}): Promise<Client> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers });
    const queue: { data: Buffer; isBinary: boolean }[] = [];
    const waiting: ((m: { data: Buffer; isBinary: boolean }) => void)[] = [];
    ws.on('message', (data, isBinary) => {
      const m = { data: Buffer.from(data as Buffer), isBinary };
      const w = waiting.shift();
      if (w) w(m);
      else queue.push(m);
    });
    const next = (): Promise<{ data: Buffer; isBinary: boolean }> =>
      within(
        new Promise((res) => {
          const m = queue.shift();
          if (m) res(m);
          else waiting.push(res);
        }),
        5000,
        'websocket message',
      );
    ws.once('open', () => resolve({ ws, next, text: () => next().then((m) => m.data.toString()) }));
    ws.once('error', reject);
    ws.once('unexpected-response', (_req, res) => reject(Object.assign(new Error(`HTTP ${res.statusCode}`), { statusCode: res.statusCode })));
  });
}

describe('WebSocket upgrade through a host route', () => {
  let gw: RunningGateway;
  let wsServer: WebSocketServer;
  let httpServer: Server;
  let refusing: TestUpstream;
  let endless: TestUpstream;
  let endlessClosed = false;
  let upstreamPort: number;
  let port: number;
  const handshakes: IncomingHttpHeaders[] = [];
  const closedUpstream: number[] = [];

  before(async () => {
    httpServer = createServer((_req, res) => res.writeHead(426).end());
    wsServer = new WebSocketServer({ server: httpServer });
    wsServer.on('connection', (ws, req) => {
      handshakes.push(req.headers);
      ws.send(`welcome ${req.url}`);
      ws.on('message', (data, isBinary) => {
        if (!isBinary && String(data) === 'please close') return void ws.close(4001, 'asked to');
        ws.send(isBinary ? data : `echo:${String(data)}`, { binary: isBinary });
      });
      ws.on('close', () => closedUpstream.push(Date.now()));
    });
    await new Promise<void>((resolve) => httpServer.listen(0, '127.0.0.1', resolve));
    upstreamPort = (httpServer.address() as { port: number }).port;
    // A plain HTTP server with no 'upgrade' handler: node answers upgrade requests through the request handler.
    refusing = await startUpstream((_req, res) => {
      res.writeHead(404, { 'content-type': 'text/plain', 'x-refused': 'yes' });
      res.end('no websockets here');
    });
    // Declines the upgrade with a 64 MiB body (chunked, written as fast as the socket drains): endless as far as the
    // 1 MiB cap goes, finite so that a gateway without the cap still answers (and this test fails, not the machine).
    endless = await startUpstream((_req, res) => {
      res.writeHead(403, { 'content-type': 'text/plain' });
      const chunk = Buffer.alloc(64 * 1024, 'n');
      let left = 1024;
      const pump = (): void => {
        while (!res.destroyed && left > 0) {
          left--;
          if (!res.write(chunk)) return;
        }
        if (left === 0) res.end();
      };
      res.on('drain', pump);
      res.on('close', () => (endlessClosed = true));
      pump();
    });
    const closedPort = await freePort(); // nothing listens there
    ({ gw, ports: [port] } = await startGatewayOnFreePorts(1, ([port]) => ({
      binds: [
        {
          port,
          listeners: [
            {
              routes: [
                { name: 'refuse', matches: [{ path: { pathPrefix: '/refuse' } }], backends: [{ host: `127.0.0.1:${refusing.port}` }] },
                { name: 'endless', matches: [{ path: { pathPrefix: '/endless' } }], backends: [{ host: `127.0.0.1:${endless.port}` }] },
                { name: 'closed', matches: [{ path: { pathPrefix: '/closed' } }], backends: [{ host: `127.0.0.1:${closedPort}` }] },
                {
                  name: 'signed',
                  matches: [{ path: { pathPrefix: '/signed' } }],
                  policies: { apiKey: { mode: 'strict', keys: [{ key: 'client-key' }] }, backendAuth: { key: 'upstream-key' } },
                  backends: [{ host: `127.0.0.1:${upstreamPort}` }],
                },
                {
                  name: 'queried',
                  matches: [{ path: { pathPrefix: '/queried' } }],
                  policies: { backendAuth: { key: { value: 'ws-key', location: { queryParameter: { name: 'token' } } } } },
                  backends: [{ host: `127.0.0.1:${upstreamPort}` }],
                },
                { name: 'ws', backends: [{ host: `127.0.0.1:${upstreamPort}` }] },
              ],
            },
          ],
        },
      ],
    })));
  });
  after(async () => {
    await gw?.stop();
    for (const c of wsServer.clients) c.terminate();
    wsServer.close();
    await new Promise<void>((resolve) => httpServer.close(() => resolve()));
    await refusing?.close();
    await endless?.close();
  });

  it('text and binary messages flow both ways', async () => {
    const c = await openSocket(`ws://127.0.0.1:${port}/chat?room=1`);
    try {
      assert.equal(await c.text(), 'welcome /chat?room=1');
      c.ws.send('hello');
      assert.equal(await c.text(), 'echo:hello');
      // Larger than one TCP segment, to make sure the pipe is not just a first-packet relay.
      const large = 'x'.repeat(200_000);
      c.ws.send(large);
      assert.equal(await c.text(), `echo:${large}`);
      const binary = Buffer.from([0, 1, 2, 254, 255]);
      c.ws.send(binary);
      const m = await c.next();
      assert.equal(m.isBinary, true);
      assert.deepEqual(m.data, binary);
    } finally {
      c.ws.close();
    }
  });

  it('the handshake carries X-Forwarded-* and the client Host (IP-literal target)', async () => {
    const c = await openSocket(`ws://127.0.0.1:${port}/h`, { host: 'front.example', 'x-forwarded-for': '203.0.113.9' });
    await c.text();
    c.ws.close();
    const h = handshakes.at(-1)!;
    assert.equal(h.host, 'front.example');
    // The test client is not a trusted proxy: its own X-Forwarded-For is dropped (ADR 0014).
    assert.equal(h['x-forwarded-for'], '127.0.0.1');
    assert.equal(h['x-forwarded-proto'], 'http');
    assert.equal(h.upgrade, 'websocket');
  });

  it("backendAuth puts the gateway's credential on the upgrade request, in place of the client's", async () => {
    const c = await openSocket(`ws://127.0.0.1:${port}/signed/chat`, { authorization: 'Bearer client-key' });
    assert.equal(await c.text(), 'welcome /signed/chat');
    c.ws.close();
    const h = handshakes.at(-1)!;
    assert.equal(h.authorization, 'Bearer upstream-key');
    await assert.rejects(openSocket(`ws://127.0.0.1:${port}/signed/chat`), (err: { statusCode?: number }) => err.statusCode === 401);
  });

  it('a backendAuth key in a query parameter is on the upgrade request once, in place of the client\'s (ADR 0175)', async () => {
    const c = await openSocket(`ws://127.0.0.1:${port}/queried/chat?room=1&token=forged`);
    assert.equal(await c.text(), 'welcome /queried/chat?room=1&token=ws-key');
    c.ws.close();
  });

  it('closing the client closes the upstream socket', async () => {
    const before = closedUpstream.length;
    const c = await openSocket(`ws://127.0.0.1:${port}/bye`);
    await c.text();
    c.ws.close(1000, 'done');
    const [code] = await within(once(c.ws, 'close'), 5000, 'client close');
    assert.equal(code, 1000);
    await waitFor(() => closedUpstream.length > before, 5000, 'the upstream socket to close');
  });

  it('the upstream closing reaches the client with its close code', async () => {
    const c = await openSocket(`ws://127.0.0.1:${port}/close-me`);
    await c.text();
    c.ws.send('please close');
    const [code, reason] = await within(once(c.ws, 'close'), 5000, 'close from upstream');
    assert.equal(code, 4001);
    assert.equal(String(reason), 'asked to');
  });

  it('an upstream that refuses the upgrade: the client gets its 404', async () => {
    const err = (await openSocket(`ws://127.0.0.1:${port}/refuse`).then(
      () => assert.fail('the upgrade must not succeed'),
      (e: unknown) => e,
    )) as { statusCode?: number };
    assert.equal(err.statusCode, 404);
  });

  it('the refusal is relayed with its headers and body', async () => {
    const res = await new Promise<{ status: number; headers: IncomingHttpHeaders; body: string }>((resolve, reject) => {
      const ws = new WebSocket(`ws://127.0.0.1:${port}/refuse`);
      ws.on('error', () => undefined);
      ws.once('open', () => reject(new Error('unexpected upgrade')));
      ws.once('unexpected-response', (_req, r) => {
        let body = '';
        r.on('data', (c: Buffer) => (body += c.toString()));
        r.on('end', () => resolve({ status: r.statusCode!, headers: r.headers, body }));
      });
    });
    assert.equal(res.status, 404);
    assert.equal(res.headers['x-refused'], 'yes');
    assert.equal(res.body, 'no websockets here');
  });

  it('a refusal with an endless body: the client gets a 502 saying so, the upstream connection is closed', async () => {
    const res = await within(new Promise<{ status: number; body: string }>((resolve, reject) => {
      const ws = new WebSocket(`ws://127.0.0.1:${port}/endless`);
      ws.on('error', () => undefined);
      ws.once('open', () => reject(new Error('unexpected upgrade')));
      ws.once('unexpected-response', (_req, r) => {
        let body = '';
        r.on('data', (c: Buffer) => (body += c.toString()));
        r.on('end', () => resolve({ status: r.statusCode!, body }));
      });
    }), 20_000, 'the answer to the endless refusal');
    assert.equal(res.status, 502);
    assert.match(JSON.parse(res.body).error.message, /declined the upgrade with a body larger than 1 MiB/);
    assert.doesNotMatch(res.body, /127\.0\.0\.1/, 'the answer does not name the upstream address (ADR 0117)');
    await waitFor(() => endlessClosed, 5000, 'the endless upstream connection to close');
    await waitFor(() => gw.logs.some((l) => l.includes('http.path=/endless ') && / http\.status=502 /.test(l)), 5000, 'the access log line with 502');
  });

  it('the access log and the route metrics carry the status the client got, not 101, for refused and failed upgrades', async () => {
    const refused = await openSocket(`ws://127.0.0.1:${port}/refuse/logged`).then(
      () => assert.fail('the upgrade must not succeed'),
      (e: unknown) => e as { statusCode?: number },
    );
    assert.equal(refused.statusCode, 404);
    const down = await openSocket(`ws://127.0.0.1:${port}/closed/logged`).then(
      () => assert.fail('the upgrade must not succeed'),
      (e: unknown) => e as { statusCode?: number },
    );
    assert.equal(down.statusCode, 503);
    const c = await openSocket(`ws://127.0.0.1:${port}/upgraded/logged`);
    await c.text();
    const find = (path: string): string | undefined => gw.logs.find((l) => / INFO +request /.test(l) && l.includes(`http.path=${path} `));
    await waitFor(() => ['/refuse/logged', '/closed/logged', '/upgraded/logged'].every((p) => find(p) !== undefined), 5000, 'the access log lines');
    assert.match(find('/refuse/logged')!, / http\.status=404 /);
    assert.match(find('/closed/logged')!, / http\.status=503 /);
    assert.match(find('/upgraded/logged')!, / http\.status=101 /);
    c.ws.close();
    const metrics = await (await request(`${gw.statsUrl}/metrics`)).body.text();
    const requests = metrics.split('\n').filter((l) => l.startsWith('switchyard_requests_total{'));
    assert.ok(requests.some((l) => /route="refuse",status="404"/.test(l)), requests.join('\n'));
    assert.ok(requests.some((l) => /route="closed",status="503"/.test(l)), requests.join('\n'));
    assert.ok(requests.some((l) => /route="ws",status="101"/.test(l)), requests.join('\n'));
    assert.ok(!requests.some((l) => /route="(refuse|closed)",status="101"/.test(l)), requests.join('\n'));
  });

  it('an upgrade refused before any route (a path the normalisation refuses) is counted, as a plain request is (ADR 0166)', async () => {
    const unrouted = async (): Promise<number> => {
      const metrics = await (await request(`${gw.statsUrl}/metrics`)).body.text();
      const line = metrics.split('\n').find((l) => l.startsWith('switchyard_requests_total{') && l.includes('route=""') && l.includes('status="400"'));
      return line === undefined ? 0 : Number(line.split(' ').at(-1));
    };
    const before = await unrouted();
    const refused = await openSocket(`ws://127.0.0.1:${port}/a%2Fb`).then(
      () => assert.fail('the upgrade must not succeed'),
      (e: unknown) => e as { statusCode?: number },
    );
    assert.equal(refused.statusCode, 400);
    assert.equal(await unrouted(), before + 1);
  });

  // ADR 0055: the handshake's `request` line is written at the 101; when the connection closes, a second line,
  // `upgrade closed`, says how long it lasted, the bytes relayed each way and how it ended.
  const closedLine = async (path: string): Promise<string> => {
    const find = (): string | undefined => gw.logs.find((l) => / INFO +upgrade closed /.test(l) && l.includes(`http.path=${path} `));
    await waitFor(() => find() !== undefined, 5000, `the upgrade closed line of ${path}`);
    return find()!;
  };
  const field = (line: string, name: string): string | undefined => line.match(new RegExp(` ${name.replace(/\./g, '\\.')}=("[^"]*"|\\S+)`))?.[1];

  it('a client that closes: the connection line has its duration, bytes each way, the close code and reason', async () => {
    const c = await openSocket(`ws://127.0.0.1:${port}/closing/logged`);
    await c.text(); // welcome /closing/logged (31 bytes on the wire)
    c.ws.send('0123456789');
    await c.text();
    await new Promise((resolve) => setTimeout(resolve, 120));
    c.ws.close(1000, 'done');
    await within(once(c.ws, 'close'), 5000, 'client close');
    const line = await closedLine('/closing/logged');
    assert.match(line, / route=ws /);
    assert.match(line, / http\.status=101 /);
    assert.equal(field(line, 'upgrade.protocol'), 'websocket');
    assert.equal(field(line, 'websocket.close.code'), '1000');
    assert.equal(field(line, 'websocket.close.reason'), 'done');
    assert.equal(field(line, 'upgrade.closed_by'), 'client');
    const ms = Number(field(line, 'duration')!.replace(/ms$/, ''));
    assert.ok(ms >= 100 && ms < 5000, `the connection's duration, not the handshake's: ${ms}ms`);
    // Client frames (masked): the 10-byte text (6 + 10) and the close (6 + 2 + 4); upstream: welcome, echo, close.
    assert.equal(Number(field(line, 'upgrade.bytes.received')), 16 + 12);
    assert.equal(Number(field(line, 'upgrade.bytes.sent')), 2 + 'welcome /closing/logged'.length + 2 + 'echo:0123456789'.length + 2 + 6);
    // The handshake's own line is still there, written at the 101.
    assert.ok(gw.logs.some((l) => / INFO +request /.test(l) && l.includes('http.path=/closing/logged ')));
  });

  it('the upstream that closes: its code and reason, closed by the upstream', async () => {
    const c = await openSocket(`ws://127.0.0.1:${port}/upstream-closes/logged`);
    await c.text();
    c.ws.send('please close');
    await within(once(c.ws, 'close'), 5000, 'close from upstream');
    const line = await closedLine('/upstream-closes/logged');
    assert.equal(field(line, 'websocket.close.code'), '4001');
    assert.equal(field(line, 'websocket.close.reason'), '"asked to"');
    assert.equal(field(line, 'upgrade.closed_by'), 'upstream');
  });

  it('a client that drops the connection without a Close frame: 1006 (abnormal), closed by the client', async () => {
    const c = await openSocket(`ws://127.0.0.1:${port}/dropped/logged`);
    await c.text();
    c.ws.terminate();
    const line = await closedLine('/dropped/logged');
    assert.equal(field(line, 'websocket.close.code'), '1006');
    assert.equal(field(line, 'websocket.close.reason'), undefined);
    assert.equal(field(line, 'upgrade.closed_by'), 'client');
  });

  it('config.logging rules apply to the connection line: fields.remove drops the close reason, the filter drops both lines', async () => {
    const started = await startGatewayOnFreePorts(1, ([p]) => ({
      config: { logging: { format: 'json', filter: '!request.path.startsWith("/quiet")', fields: { remove: ['websocket.close.reason'] } } },
      binds: [{ port: p, listeners: [{ routes: [{ backends: [{ host: `127.0.0.1:${upstreamPort}` }] }] }] }],
    }));
    try {
      const p2 = started.ports[0]!;
      for (const path of ['/loud', '/quiet']) {
        const c = await openSocket(`ws://127.0.0.1:${p2}${path}`);
        await c.text();
        c.ws.close(1000, 'secret-ish reason');
        await within(once(c.ws, 'close'), 5000, 'client close');
      }
      const closed = (): Record<string, unknown>[] =>
        started.gw.logs.filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>).filter((r) => r.msg === 'upgrade closed');
      await waitFor(() => closed().length > 0, 5000, 'the upgrade closed line');
      await new Promise((resolve) => setTimeout(resolve, 100));
      const [line, ...more] = closed();
      assert.equal(more.length, 0, 'the filtered path has no connection line');
      assert.equal(line!['http.path'], '/loud');
      assert.equal(line!['websocket.close.code'], 1000);
      assert.equal(typeof line!.duration_ms, 'number');
      assert.equal('websocket.close.reason' in line!, false);
      assert.ok(!started.gw.logs.some((l) => l.includes('/quiet')));
    } finally {
      await started.gw.stop();
    }
  });

  it('an upgrade that is refused has no connection line', async () => {
    await openSocket(`ws://127.0.0.1:${port}/refuse/no-connection`).catch(() => undefined);
    await waitFor(() => gw.logs.some((l) => l.includes('http.path=/refuse/no-connection ')), 5000, 'the request line');
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.ok(!gw.logs.some((l) => / INFO +upgrade closed /.test(l) && l.includes('http.path=/refuse/no-connection ')));
  });

  it('an upstream that is down: the client gets 503', async () => {
    const err = (await openSocket(`ws://127.0.0.1:${port}/closed`).then(
      () => assert.fail('the upgrade must not succeed'),
      (e: unknown) => e,
    )) as { statusCode?: number };
    assert.equal(err.statusCode, 503);
  });

  it('a client that leaves during a slow upstream handshake leaves no upstream connection behind', async () => {
    // An upstream that takes 2s to accept the upgrade; the client gives up after 50ms.
    const upSockets: import('node:net').Socket[] = [];
    const slow = createServer();
    const slowWss = new WebSocketServer({ noServer: true });
    let upstreamSawClose = false;
    slow.on('upgrade', (req, socket, head) => {
      upSockets.push(socket as import('node:net').Socket);
      // Read the socket so that the gateway giving up (FIN or RST) is noticed here.
      socket.on('data', () => undefined);
      socket.on('end', () => (upstreamSawClose = true));
      socket.on('close', () => (upstreamSawClose = true));
      socket.on('error', () => undefined);
      setTimeout(() => {
        if (!socket.destroyed) slowWss.handleUpgrade(req, socket, head, (ws) => ws.send('late'));
      }, 2000);
    });
    await new Promise<void>((resolve) => slow.listen(0, '127.0.0.1', resolve));
    let g2: RunningGateway | undefined;
    try {
      const started = await startGatewayOnFreePorts(1, ([p]) => ({
        binds: [{ port: p, listeners: [{ routes: [{ backends: [{ host: `127.0.0.1:${(slow.address() as { port: number }).port}` }] }] }] }],
      }));
      g2 = started.gw;
      const p2 = started.ports[0]!;
      const ws = new WebSocket(`ws://127.0.0.1:${p2}/slow`);
      ws.on('error', () => undefined);
      await waitFor(() => upSockets.length === 1, 5000, 'the handshake to reach the upstream');
      await new Promise((resolve) => setTimeout(resolve, 50));
      ws.terminate();
      // Well before the upstream would finish its handshake: the gateway gave the connection up itself.
      await waitFor(() => upstreamSawClose, 1000, 'the upstream connection to close');
    } finally {
      for (const s of upSockets) s.destroy();
      slowWss.close();
      await g2?.stop();
      await new Promise<void>((resolve) => slow.close(() => resolve()));
    }
  });

  it('the gateway keeps serving plain HTTP and WebSockets afterwards', async () => {
    const res = await request(`${gw.url(port)}/refuse/plain`);
    assert.equal(res.statusCode, 404);
    await res.body.dump();
    const c = await openSocket(`ws://127.0.0.1:${port}/again`);
    assert.equal(await c.text(), 'welcome /again');
    c.ws.close();
  });

  it('no upgraded or refused connection is left holding the config (stop does not wait for the drain deadline)', async () => {
    await waitFor(() => wsServer.clients.size === 0, 5000, 'client sockets to close');
    const started = Date.now();
    await gw.stop();
    assert.ok(Date.now() - started < 3000, `stop took ${Date.now() - started}ms`);
  });
});

// ADR 0118: which upgrades are relayed, the upstream's 101 checked against the request, and the idle timeout of an
// upgraded connection. The upstream here is a plain TCP server that "switches" to whatever it is asked (or to the
// protocol its path names: `/answers-<token>/...`, `/answers-none/...` for a 101 without Upgrade), then records the
// tunnel's bytes and answers each chunk with `pong:<chunk>`.
describe('upgrade protocols, the 101 and idle upgraded connections (ADR 0118)', () => {
  interface SwitchConn {
    head: string;
    tunnel: string;
    closed: boolean;
  }
  const conns: SwitchConn[] = [];
  let switcher: import('node:net').Server;
  let switcherPort: number;
  let gw: RunningGateway;
  let port: number;
  let open: RunningGateway;
  let openPort: number;
  const raws: RawClient[] = [];

  before(async () => {
    switcher = createNetServer((s) => {
      const conn: SwitchConn = { head: '', tunnel: '', closed: false };
      conns.push(conn);
      let buf = '';
      let switched = false;
      s.on('error', () => undefined);
      s.on('close', () => (conn.closed = true));
      s.on('data', (chunk: Buffer) => {
        if (switched) {
          conn.tunnel += chunk.toString('latin1');
          s.write(`pong:${chunk.toString('latin1')}`);
          return;
        }
        buf += chunk.toString('latin1');
        const end = buf.indexOf('\r\n\r\n');
        if (end === -1) return;
        conn.head = buf.slice(0, end);
        const path = conn.head.split(' ')[1]!;
        const asked = /\r\nupgrade: *([^\r]*)/i.exec(conn.head)?.[1] ?? '';
        const answered = /^\/answers-([^/]+)\//.exec(path)?.[1] ?? asked;
        const upgrade = answered === 'none' ? '' : `Upgrade: ${answered}\r\n`;
        s.write(`HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\n${upgrade}\r\n`);
        switched = true;
        conn.tunnel += buf.slice(end + 4);
      });
    });
    await new Promise<void>((resolve) => switcher.listen(0, '127.0.0.1', resolve));
    switcherPort = (switcher.address() as { port: number }).port;
    const routes = [
      { name: 'idle', matches: [{ path: { pathPrefix: '/idle' } }], policies: { timeout: { streamIdleTimeout: '500ms' } }, backends: [{ host: `127.0.0.1:${switcherPort}` }] },
      { name: 'switch', backends: [{ host: `127.0.0.1:${switcherPort}` }] },
    ];
    ({ gw, ports: [port] } = await startGatewayOnFreePorts(1, ([p]) => oneListenerConfig(p!, routes)));
    ({ gw: open, ports: [openPort] } = await startGatewayOnFreePorts(1, ([p]) => oneListenerConfig(p!, routes, { config: { upgradeProtocols: ['websocket', 'foo'] } })));
  });
  after(async () => {
    for (const c of raws) c.destroy();
    await gw?.stop();
    await open?.stop();
    await new Promise<void>((resolve) => switcher.close(() => resolve()));
  });

  const raw = (p: number): RawClient => {
    const c = new RawClient(p);
    raws.push(c);
    return c;
  };
  const handshake = (path: string, upgrade: string): string => `GET ${path} HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: ${upgrade}\r\n\r\n`;
  const connOf = (path: string): SwitchConn | undefined => conns.find((c) => c.head.startsWith(`GET ${path} `));

  it('an upgrade to a protocol that is not enabled (only websocket is by default): 403, nothing reaches the upstream', async () => {
    // The audit's case: a plain HTTP backend that answers 101 to anything would get every later byte, past the
    // gateway's routes and policies (`GET /private/secret` down the tunnel).
    for (const [i, upgrade] of ['foo', 'FOO', 'foo/2', 'websocket, foo', 'TLS/1.0'].entries()) {
      const c = raw(port);
      c.write(handshake(`/api/mode-switch-${i}`, upgrade));
      const a = await c.read({ interim: true });
      assert.equal(a.status, 403, `Upgrade: ${upgrade}: ${a.line}`);
      assert.equal(JSON.parse(a.body).error.type, 'upgrade_not_allowed');
      c.write('GET /private/secret HTTP/1.1\r\nHost: a\r\n\r\n');
      await c.closed();
      assert.equal(connOf(`/api/mode-switch-${i}`), undefined, 'the handshake did not go upstream');
    }
    assert.ok(!conns.some((c) => c.tunnel.includes('/private/secret')));
  });

  it('a 101 naming another protocol than the one asked for: 502, both connections closed, nothing relayed', async () => {
    for (const answered of ['foo', 'none']) {
      const c = raw(port);
      const path = `/answers-${answered}/ws`;
      // Bytes sent before the answer are held for the upgraded protocol: they must not reach the upstream either.
      c.write(handshake(path, 'websocket') + 'GET /private/secret HTTP/1.1\r\nHost: a\r\n\r\n');
      const a = await c.read({ interim: true });
      assert.equal(a.status, 502, `101 with ${answered === 'none' ? 'no Upgrade' : `Upgrade: ${answered}`}: ${a.line}`);
      assert.match(JSON.parse(a.body).error.message, /101/);
      assert.doesNotMatch(a.body, /127\.0\.0\.1/, 'the answer does not name the upstream address (ADR 0117)');
      await c.closed();
      const conn = connOf(path)!;
      await waitFor(() => conn.closed, 5000, 'the upstream connection to close');
      assert.equal(conn.tunnel, '');
      await waitFor(() => gw.logs.some((l) => / INFO +request /.test(l) && l.includes(`http.path=${path} `)), 5000, 'the request line');
      assert.match(gw.logs.find((l) => / INFO +request /.test(l) && l.includes(`http.path=${path} `))!, / http\.status=502 /);
    }
  });

  it('config.upgradeProtocols enables another protocol; its 101 is matched without regard to case', async () => {
    const c = raw(openPort);
    c.write(handshake('/answers-foo/tunnel', 'FOO'));
    const a = await c.read({ interim: true });
    assert.equal(a.status, 101, a.body);
    c.write('hello');
    await waitFor(() => c.unread() === 'pong:hello', 5000, 'the tunnel to carry bytes both ways');
    assert.equal(connOf('/answers-foo/tunnel')!.tunnel, 'hello');
    c.destroy();
  });

  it('with another protocol enabled, a 101 to a different one is still refused: 502', async () => {
    const c = raw(openPort);
    c.write(handshake('/answers-websocket/x', 'foo'));
    const a = await c.read({ interim: true });
    assert.equal(a.status, 502);
    await c.closed();
    await waitFor(() => connOf('/answers-websocket/x')!.closed, 5000, 'the upstream connection to close');
  });

  it("an upgraded connection silent for the route's stream idle timeout is closed on both sides; the connection line says why", async () => {
    const c = raw(port);
    c.write(handshake('/idle/quiet', 'websocket'));
    const a = await c.read({ interim: true });
    assert.equal(a.status, 101);
    const started = Date.now();
    await c.closed(5000);
    const waited = Date.now() - started;
    assert.ok(waited >= 450 && waited < 4000, `closed after ${waited} ms`);
    await waitFor(() => connOf('/idle/quiet')!.closed, 5000, 'the upstream connection to close');
    const find = (): string | undefined => gw.logs.find((l) => / INFO +upgrade closed /.test(l) && l.includes('http.path=/idle/quiet '));
    await waitFor(() => find() !== undefined, 5000, 'the upgrade closed line');
    assert.match(find()!, / upgrade\.closed_by=gateway /);
    assert.match(find()!, / upgrade\.close_cause=idle_timeout /);
  });

  it('bytes in either direction keep an upgraded connection open past the idle timeout', async () => {
    const c = raw(port);
    c.write(handshake('/idle/busy', 'websocket'));
    assert.equal((await c.read({ interim: true })).status, 101);
    // 1.5 s of traffic, 250 ms apart: three times the 500 ms idle timeout.
    for (let i = 0; i < 6; i++) {
      await sleep(250);
      c.write(`m${i}`);
      await waitFor(() => c.unread().endsWith(`pong:m${i}`), 2000, `the answer to m${i}`);
    }
    assert.equal(c.ended, false);
    assert.equal(connOf('/idle/busy')!.closed, false);
    c.destroy();
  });
});

// A stop drains WebSockets as it drains requests (Envoy: upgraded connections live until the drain deadline): the
// drain's idle close took an upgraded connection (it carries no response) for an idle one and cut every WebSocket
// the moment the stop began (1006, no close frame), while SSE streams and requests had `drainTimeout` to finish.
describe('WebSockets at a stop', () => {
  it('an open WebSocket goes on during the drain; once its client closes it the stop ends, before the deadline', async () => {
    const httpServer = createServer();
    const wss = new WebSocketServer({ server: httpServer });
    wss.on('connection', (ws) => ws.on('message', (m) => ws.send(`echo ${String(m)}`)));
    await new Promise<void>((resolve) => httpServer.listen(0, '127.0.0.1', resolve));
    const up = (httpServer.address() as { port: number }).port;
    const { gw, ports } = await startGatewayOnFreePorts(1, ([p]) => ({
      ...oneListenerConfig(p!, [{ name: 'ws', backends: [{ host: `127.0.0.1:${up}` }] }]),
      config: { adminAddr: '127.0.0.1:0', statsAddr: '127.0.0.1:0', readinessAddr: '127.0.0.1:0', drainTimeout: '5s' },
    }));
    try {
      const c = await openSocket(`ws://127.0.0.1:${ports[0]}/live`);
      const started = Date.now();
      const stopping = gw.stop();
      await sleep(300);
      assert.equal(c.ws.readyState, WebSocket.OPEN);
      c.ws.send('still there');
      assert.equal(await c.text(), 'echo still there');
      const closed = once(c.ws, 'close');
      c.ws.close(1000, 'bye');
      const [code] = (await closed) as [number];
      assert.equal(code, 1000);
      await stopping;
      assert.ok(Date.now() - started < 4000, `the stop took ${Date.now() - started} ms`);
    } finally {
      await gw.stop();
      wss.close();
      await new Promise<void>((resolve) => httpServer.close(() => resolve()));
    }
  });
});
