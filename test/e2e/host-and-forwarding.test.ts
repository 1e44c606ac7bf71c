import assert from 'node:assert/strict';
import { connect } from 'node:net';
import type { Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { RunningGateway } from '../helpers/gateway.ts';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';
import { rawRequest, requestOn, sleep, startGatewayOnFreePorts, waitFor, within } from './proxy-support.ts';

// Host normalisation, the X-Forwarded-For trust model, header timeout, connection cap and pipelined errors
// (docs/adr/0014-hosts-and-forwarding-headers.md, docs/security.md).

/** The listeners every gateway here serves: `secure.example` refuses everything (its "auth"); the rest is open. */
const listeners = (upstreamPort: number) => [
  {
    name: 'secure',
    hostname: 'secure.example',
    routes: [{ name: 'locked', policies: { authorization: { rules: ['false'] } }, backends: [{ host: `127.0.0.1:${upstreamPort}` }] }],
  },
  {
    name: 'open',
    routes: [
      {
        name: 'by-source',
        matches: [{ path: { pathPrefix: '/by-source' } }],
        policies: { authorization: { rules: ['source.address == "203.0.113.9" && source.rawAddress == "127.0.0.1"'] } },
        backends: [{ host: `127.0.0.1:${upstreamPort}` }],
      },
      { name: 'all', backends: [{ host: `127.0.0.1:${upstreamPort}` }] },
    ],
  },
];

/** Open a connection and wait until it is established. */
function open(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => resolve(socket));
    socket.once('error', reject);
  });
}

/** Everything the server sends until it closes the connection. */
function readAll(socket: Socket): Promise<string> {
  return new Promise((resolve) => {
    let data = '';
    socket.setEncoding('latin1');
    socket.on('data', (c: string) => (data += c));
    socket.on('error', () => undefined);
    socket.once('close', () => resolve(data));
  });
}

describe('hosts, forwarding headers and connections', () => {
  let up: TestUpstream;
  let plain: RunningGateway;
  let plainPort: number;
  let trusting: RunningGateway;
  let trustingPort: number;
  let limited: RunningGateway;
  let limitedPort: number;

  before(async () => {
    up = await startUpstream((req, res, body) => {
      const reply = (): void => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ url: req.url, bodyLength: body.length }));
      };
      if (req.url?.startsWith('/slow')) setTimeout(reply, 300);
      else reply();
    });
    ({ gw: plain, ports: [plainPort] } = await startGatewayOnFreePorts(1, ([p]) => ({ binds: [{ port: p, listeners: listeners(up.port) }] })));
    ({ gw: trusting, ports: [trustingPort] } = await startGatewayOnFreePorts(1, ([p]) => ({
      config: { trustedProxies: ['127.0.0.1', '::1', '10.0.0.0/8'] },
      binds: [{ port: p, listeners: listeners(up.port) }],
    })));
    ({ gw: limited, ports: [limitedPort] } = await startGatewayOnFreePorts(1, ([p]) => ({
      config: { headerTimeout: '500ms', maxConnectionsPerBind: 3 },
      binds: [{ port: p, listeners: listeners(up.port) }],
    })));
  });

  after(async () => {
    await plain?.stop();
    await trusting?.stop();
    await limited?.stop();
    await up?.close();
  });

  const last = () => up.received[up.received.length - 1]!;
  const get = (port: number, path: string, headers: string) => rawRequest(port, `GET ${path} HTTP/1.1\n${headers}\nConnection: close`);

  describe('Host', () => {
    for (const host of ['secure.example', 'secure.example.', 'SECURE.Example.', 'secure.example.:8080', 'Secure.Example:80']) {
      it(`\`Host: ${host}\` is served by the secure.example listener (and its auth)`, async () => {
        const res = await get(plainPort, '/x', `Host: ${host}`);
        assert.equal(res.status, 403, res.body.toString());
      });
    }

    for (const host of ['a/b', 'secure.example..', '.secure.example', 'a..b', 'user@secure.example', 'secure.example:80x', 'a\\b', ':80', 'a b', '[::1', 'secure.example:8080:1', 'a:99999', 'a:65536', 'a:0', 'a:00000', '[::1]:70000', '[::1]:0']) {
      it(`malformed \`Host: ${host}\` gets 400`, async () => {
        const before = up.received.length;
        const res = await get(plainPort, '/x', `Host: ${host}`);
        assert.equal(res.status, 400, res.body.toString());
        assert.equal(up.received.length, before, 'nothing reached the upstream');
      });
    }

    it('an absolute-form target names the host, whatever Host says (RFC 9112 §3.2.2)', async () => {
      assert.equal((await get(plainPort, 'http://Secure.Example./x', 'Host: open.example')).status, 403);
      assert.equal((await get(plainPort, 'http://open.example:8080/x', 'Host: secure.example')).status, 200);
      assert.equal(last().headers.host, 'open.example:8080');
      assert.equal((await get(plainPort, 'http://a%2fb/x', 'Host: h')).status, 400);
    });

    it('an HTTP/1.0 request without Host is served without an empty X-Forwarded-Host, and a client\'s own is not kept', async () => {
      const res = await rawRequest(plainPort, 'GET /x HTTP/1.0\nX-Forwarded-Host: evil.example\nConnection: close');
      assert.equal(res.status, 200, res.body.toString());
      assert.equal(last().headers['x-forwarded-host'], undefined);
    });

    it('duplicate Host headers get 400', async () => {
      const before = up.received.length;
      for (const hosts of ['Host: open.example\nHost: secure.example', 'Host: secure.example\nhost: secure.example']) {
        const res = await get(plainPort, '/x', hosts);
        assert.equal(res.status, 400, hosts);
      }
      assert.equal(up.received.length, before);
    });

    it('well-formed hosts still reach the open listener', async () => {
      // `h:` (an empty port, RFC 3986 §3.2.3) and ports 1-65535, leading zeros included, are well-formed (ADR 0117).
      for (const host of ['open.example', 'open.example:8080', '127.0.0.1:9', '[::1]:8080', '[::1]', 'under_score.example', 'a:65535', 'a:1', 'a:00080', 'a:', '[::1]:']) {
        const res = await get(plainPort, '/x', `Host: ${host}`);
        assert.equal(res.status, 200, host);
        assert.equal(last().headers.host, host, 'the Host sent upstream is the client\'s');
      }
    });
  });

  describe('forwarding headers from an untrusted peer (no `trustedProxies`)', () => {
    it('client-sent X-Forwarded-For, X-Real-IP and Forwarded are dropped; X-Forwarded-For is the peer', async () => {
      const res = await get(plainPort, '/x', 'Host: h\nX-Forwarded-For: 203.0.113.9\nX-Real-IP: 203.0.113.9\nForwarded: for=203.0.113.9');
      assert.equal(res.status, 200);
      assert.equal(last().headers['x-forwarded-for'], '127.0.0.1');
      assert.equal(last().headers['x-real-ip'], undefined);
      assert.equal(last().headers.forwarded, undefined);
    });

    it('a client-sent X-Forwarded-Client-Cert is dropped: a client cannot claim a certificate it never presented (ADR 0138)', async () => {
      const res = await get(plainPort, '/x', 'Host: h\nX-Forwarded-Client-Cert: By=spiffe://a/b;Hash=00;Subject="CN=admin";URI=spiffe://a/admin');
      assert.equal(res.status, 200);
      assert.equal(last().headers['x-forwarded-client-cert'], undefined);
    });

    it('`source.address` in CEL is the peer, not the spoofed header', async () => {
      const res = await get(plainPort, '/by-source', 'Host: h\nX-Forwarded-For: 203.0.113.9');
      assert.equal(res.status, 403);
    });
  });

  describe('forwarding headers from a trusted proxy (`trustedProxies`)', () => {
    it('X-Forwarded-For is kept and the peer appended; X-Real-IP, Forwarded and X-Forwarded-Client-Cert pass', async () => {
      const res = await get(trustingPort, '/x', 'Host: h\nX-Forwarded-For: 198.51.100.1, 203.0.113.9\nX-Real-IP: 203.0.113.9\nForwarded: for=203.0.113.9\nX-Forwarded-Client-Cert: Hash=00;URI=spiffe://a/b');
      assert.equal(res.status, 200);
      assert.equal(last().headers['x-forwarded-for'], '198.51.100.1, 203.0.113.9, 127.0.0.1');
      assert.equal(last().headers['x-real-ip'], '203.0.113.9');
      assert.equal(last().headers.forwarded, 'for=203.0.113.9');
      // A trusted proxy in front terminated the client's TLS: its account of the certificate passes.
      assert.equal(last().headers['x-forwarded-client-cert'], 'Hash=00;URI=spiffe://a/b');
    });

    it('repeated X-Forwarded-For headers are joined before appending', async () => {
      const res = await get(trustingPort, '/x', 'Host: h\nX-Forwarded-For: 203.0.113.7\nX-Forwarded-For: 198.51.100.1');
      assert.equal(res.status, 200);
      assert.equal(last().headers['x-forwarded-for'], '203.0.113.7, 198.51.100.1, 127.0.0.1');
    });

    it('`source.address` is the right-most address that is not a trusted proxy', async () => {
      const cases: [string, number][] = [
        ['203.0.113.9', 200],
        ['198.51.100.1, 203.0.113.9', 200],
        ['203.0.113.9, 10.1.2.3', 200], // 10.0.0.0/8 is trusted: skipped
        ['203.0.113.9, 198.51.100.1', 403], // the client is 198.51.100.1; what it claims is not believed
        ['203.0.113.9, not-an-ip, 10.0.0.1', 403], // the walk stops at garbage: the client is 10.0.0.1
      ];
      for (const [xff, status] of cases) {
        const res = await get(trustingPort, '/by-source', `Host: h\nX-Forwarded-For: ${xff}`);
        assert.equal(res.status, status, xff);
      }
    });
  });

  describe('connections', () => {
    it('a client that does not finish its headers in `headerTimeout` gets 408', async () => {
      const socket = await open(limitedPort);
      const reply = readAll(socket);
      socket.write('GET /x HTTP/1.1\r\nHost: h\r\n');
      const text = await within(reply, 5000, 'header timeout');
      assert.match(text, /^HTTP\/1\.1 408 /);
    });

    it('an idle keep-alive connection is not cut by `headerTimeout`', async () => {
      const socket = await open(limitedPort);
      assert.match(await requestOn(socket, '/x'), / 200 /);
      await sleep(1200);
      assert.match(await requestOn(socket, '/x'), / 200 /);
      socket.destroy();
    });

    it('`maxConnectionsPerBind` caps open connections; a freed slot is reused', async () => {
      await sleep(100); // connections of earlier tests are gone
      const sockets = [await open(limitedPort), await open(limitedPort), await open(limitedPort)];
      for (const s of sockets) assert.match(await requestOn(s, '/x'), / 200 /);
      const extra = await open(limitedPort);
      const closed = readAll(extra);
      extra.write('GET /x HTTP/1.1\r\nHost: h\r\n\r\n');
      assert.equal(await within(closed, 5000, 'the connection over the cap'), '', 'the fourth connection is closed unanswered');
      sockets[0]!.destroy();
      await waitFor(async () => (await get(limitedPort, '/x', 'Host: h').catch(() => ({ status: 0 }))).status === 200, 5000, 'a free slot');
      for (const s of sockets) s.destroy();
    });

    it('a malformed request pipelined behind a good one does not replace its answer', async () => {
      const before = up.received.length;
      const socket = await open(plainPort);
      const reply = readAll(socket);
      socket.write('GET /slow/1 HTTP/1.1\r\nHost: h\r\n\r\nNOT AN HTTP REQUEST\r\n\r\n');
      const text = await within(reply, 5000, 'pipelined replies');
      assert.equal(up.received.length, before + 1, 'the upstream executed the good request');
      assert.match(text, /^HTTP\/1\.1 200 /, text);
      assert.match(text, /"url":"\/slow\/1"/);
      // The malformed request's 400 follows the good answer, then the connection closes.
      assert.match(text.slice(text.indexOf('/slow/1')), /HTTP\/1\.1 400 /);
    });

    it('with two good requests pipelined before the malformed one, both answers come first, in order', async () => {
      const socket = await open(plainPort);
      const reply = readAll(socket);
      socket.write('GET /slow/a HTTP/1.1\r\nHost: h\r\n\r\nGET /fast/b HTTP/1.1\r\nHost: h\r\n\r\nGET /c HTTP/1.1\r\nHost: a/b\r\n\r\nBROKEN\r\n\r\n');
      const text = await within(reply, 5000, 'pipelined replies');
      const statuses = [...text.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((m) => m[1]);
      assert.deepEqual(statuses.slice(0, 3), ['200', '200', '400'], text);
      assert.ok(text.indexOf('/slow/a') < text.indexOf('/fast/b'), text);
    });
  });
});
