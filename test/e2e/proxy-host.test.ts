import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { request } from 'undici';
import type { RunningGateway } from '../helpers/gateway.ts';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';
import { header, rawRequest, startGatewayOnFreePorts } from './proxy-support.ts';

describe('host backend forms', () => {
  let gw: RunningGateway;
  let up: TestUpstream;
  let port: number;

  before(async () => {
    up = await startUpstream();
    const route = (name: string, host: string) => ({ name, matches: [{ path: { pathPrefix: `/${name}` } }], backends: [{ host }] });
    ({ gw, ports: [port] } = await startGatewayOnFreePorts(1, ([port]) => ({
      binds: [
        {
          port,
          listeners: [
            {
              routes: [
                route('ip', `127.0.0.1:${up.port}`),
                route('url', `http://127.0.0.1:${up.port}`),
                route('url-slash', `http://127.0.0.1:${up.port}/`),
                route('dns', `localhost:${up.port}`),
                route('dns-url', `http://localhost:${up.port}`),
              ],
            },
          ],
        },
      ],
    })));
  });
  after(async () => {
    await gw?.stop();
    await up?.close();
  });

  const last = () => up.received[up.received.length - 1]!;

  it('`127.0.0.1:PORT` reaches the upstream and keeps the client Host', async () => {
    const res = await request(`${gw.url(port)}/ip/x`, { headers: { host: 'client.example:8443' } });
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers['x-upstream'], 'yes');
    await res.body.dump();
    assert.equal(last().url, '/ip/x');
    assert.equal(last().headers.host, 'client.example:8443');
  });

  it('`http://127.0.0.1:PORT` reaches the upstream and keeps the client Host', async () => {
    for (const prefix of ['/url', '/url-slash']) {
      const res = await request(`${gw.url(port)}${prefix}/y`, { headers: { host: 'client.example' } });
      assert.equal(res.statusCode, 200);
      await res.body.dump();
      assert.equal(last().url, `${prefix}/y`);
      assert.equal(last().headers.host, 'client.example');
    }
  });

  it('a DNS name (`localhost:PORT`) sends the target authority as Host', async () => {
    for (const prefix of ['/dns', '/dns-url']) {
      const res = await request(`${gw.url(port)}${prefix}/z`, { headers: { host: 'client.example' } });
      assert.equal(res.statusCode, 200);
      await res.body.dump();
      assert.equal(last().headers.host, `localhost:${up.port}`);
      // The client's authority is still visible to the upstream.
      assert.equal(last().headers['x-forwarded-host'], 'client.example');
    }
  });

  it('a path in normal form and the query are forwarded byte for byte', async () => {
    // Paths that are not in normal form (dot segments, `//`, escaped unreserved characters) are normalised first:
    // test/e2e/path-normalisation.test.ts.
    const paths = ['/ip/a%20b/c%E2%9C%93d?x=1&y=%2F&z&x=2', '/ip?', '/ip/?q=%E2%9C%93#', '/ip/ok;param?a=b=c&p=..%2F..//', '/ip/.well-known/x.y'];
    for (const p of paths) {
      // A fragment never goes on the wire; raw sockets keep the rest exactly as written.
      const target = p.replace(/#.*$/, '');
      const res = await rawRequest(port, `GET ${target} HTTP/1.1\nHost: h\nConnection: close`);
      assert.equal(res.status, 200, target);
      assert.equal(last().url, target);
    }
  });

  for (const method of ['POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']) {
    it(`${method} and its body are forwarded`, async () => {
      const body = `{"method":"${method}","n":${Math.random()}}`;
      const res = await request(`${gw.url(port)}/ip/m`, { method: method as 'POST', body, headers: { 'content-type': 'application/json' } });
      assert.equal(res.statusCode, 200);
      await res.body.dump();
      assert.equal(last().method, method);
      assert.equal(last().body.toString(), body);
      assert.equal(last().headers['content-type'], 'application/json');
      assert.equal(last().headers['content-length'], String(Buffer.byteLength(body)));
    });
  }

  it('a chunked request body is forwarded', async () => {
    const res = await rawRequest(port, 'POST /ip/chunked HTTP/1.1\nHost: h\nTransfer-Encoding: chunked\nConnection: close', '5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n');
    assert.equal(res.status, 200);
    assert.equal(last().method, 'POST');
    assert.equal(last().body.toString(), 'hello world');
  });

  it('`Expect: 100-continue` uploads (curl sends it for large bodies) are forwarded', async () => {
    const res = await rawRequest(port, 'PUT /ip/expect HTTP/1.1\nHost: h\nContent-Length: 11\nExpect: 100-continue\nConnection: close', 'hello world');
    assert.equal(res.status, 200, res.body.toString());
    assert.equal(last().method, 'PUT');
    assert.equal(last().body.toString(), 'hello world');
  });

  it('HTTP/1.0 without Host reaches the upstream with the target authority', async () => {
    const res = await rawRequest(port, 'GET /ip/old HTTP/1.0');
    assert.equal(res.status, 200);
    assert.equal(last().url, '/ip/old');
    assert.equal(last().headers.host, `127.0.0.1:${up.port}`);
  });

  it('HEAD gets the upstream headers and no body', async () => {
    const res = await request(`${gw.url(port)}/ip/head`, { method: 'HEAD' });
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers['x-upstream'], 'yes');
    assert.equal((await res.body.arrayBuffer()).byteLength, 0);
    assert.equal(last().method, 'HEAD');
  });

  it('upstream status, headers and repeated headers come back', async () => {
    const custom = await startUpstream((_req, res) => {
      res.setHeader('set-cookie', ['a=1', 'b=2']);
      res.writeHead(418, { 'x-custom': 'teapot', 'content-type': 'text/plain' });
      res.end('short and stout');
    });
    const {
      gw: g2,
      ports: [p2],
    } = await startGatewayOnFreePorts(1, ([p]) => ({ binds: [{ port: p, listeners: [{ routes: [{ backends: [{ host: `127.0.0.1:${custom.port}` }] }] }] }] }));
    try {
      const res = await request(`${g2.url(p2)}/`);
      assert.equal(res.statusCode, 418);
      assert.equal(res.headers['x-custom'], 'teapot');
      assert.deepEqual(res.headers['set-cookie'], ['a=1', 'b=2']);
      assert.equal(await res.body.text(), 'short and stout');
    } finally {
      await g2.stop();
      await custom.close();
    }
  });
});

describe('hop-by-hop headers and X-Forwarded-*', () => {
  let gw: RunningGateway;
  let up: TestUpstream;
  let port: number;

  before(async () => {
    up = await startUpstream((_req, res) => {
      res.setHeader('connection', 'keep-alive, x-resp-hop');
      res.setHeader('keep-alive', 'timeout=5, max=7');
      res.setHeader('x-resp-hop', 'secret');
      res.setHeader('trailer', 'x-checksum');
      res.setHeader('upgrade', 'h2c');
      res.setHeader('proxy-connection', 'keep-alive');
      res.setHeader('proxy-authenticate', 'Basic realm="up"');
      res.setHeader('x-end-to-end', 'kept');
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('ok');
    });
    // The test client is a trusted proxy, so the X-Forwarded-For it sends is kept (test/e2e/host-and-forwarding.test.ts
    // covers untrusted clients).
    ({ gw, ports: [port] } = await startGatewayOnFreePorts(1, ([port]) => ({
      config: { trustedProxies: ['127.0.0.1', '::1'] },
      binds: [{ port, listeners: [{ routes: [{ name: 'hop', backends: [{ host: `127.0.0.1:${up.port}` }] }] }] }],
    })));
  });
  after(async () => {
    await gw?.stop();
    await up?.close();
  });

  it('request hop-by-hop headers are not forwarded', async () => {
    const res = await rawRequest(
      port,
      [
        'GET /hop HTTP/1.1',
        'Host: front.example',
        'Connection: close, X-Custom-Hop, x-other-hop',
        'Keep-Alive: timeout=5',
        'TE: trailers, deflate',
        'Trailer: x-checksum',
        'Upgrade: h2c',
        'Proxy-Connection: keep-alive',
        'X-Custom-Hop: secret',
        'X-Other-Hop: secret2',
        'Proxy-Authorization: Basic dXNlcjpwdw==',
        'X-End-To-End: kept',
      ].join('\n'),
    );
    assert.equal(res.status, 200);
    const h = up.received[up.received.length - 1]!.headers;
    for (const name of ['keep-alive', 'te', 'trailer', 'upgrade', 'proxy-connection', 'x-custom-hop', 'x-other-hop']) {
      assert.equal(h[name], undefined, `${name} must not reach the upstream`);
    }
    // The gateway's own connection to the upstream may carry `connection: keep-alive`, never the client's tokens.
    assert.doesNotMatch(String(h.connection ?? ''), /close|custom|other/i);
    assert.equal(h['x-end-to-end'], 'kept');
    assert.equal(h['proxy-authorization'], 'Basic dXNlcjpwdw==', 'Proxy-Authorization is end to end (BEHAVIOUR.md §4.3)');
  });

  it('response hop-by-hop headers are not returned to the client', async () => {
    const res = await rawRequest(port, 'GET /hop HTTP/1.1\nHost: front.example\nConnection: close');
    assert.equal(res.status, 200);
    assert.equal(res.body.toString(), 'ok');
    for (const name of ['x-resp-hop', 'trailer', 'upgrade', 'proxy-connection', 'proxy-authenticate']) {
      assert.deepEqual(header(res, name), [], `${name} must not reach the client`);
    }
    // Connection/Keep-Alive on the client hop belong to the gateway's own server, not to the upstream's values.
    assert.doesNotMatch(header(res, 'connection').join(','), /x-resp-hop/i);
    assert.doesNotMatch(header(res, 'keep-alive').join(','), /max=7/);
    assert.deepEqual(header(res, 'x-end-to-end'), ['kept']);
  });

  it('sets X-Forwarded-For, -Proto and -Host', async () => {
    const res = await request(`${gw.url(port)}/xff`, { headers: { host: 'front.example:8080' } });
    await res.body.dump();
    const h = up.received[up.received.length - 1]!.headers;
    assert.equal(h['x-forwarded-for'], '127.0.0.1');
    assert.equal(h['x-forwarded-proto'], 'http');
    assert.equal(h['x-forwarded-host'], 'front.example:8080');
  });

  it('appends to an existing X-Forwarded-For', async () => {
    const res = await request(`${gw.url(port)}/xff`, { headers: { 'x-forwarded-for': '203.0.113.7, 198.51.100.1' } });
    await res.body.dump();
    assert.equal(up.received[up.received.length - 1]!.headers['x-forwarded-for'], '203.0.113.7, 198.51.100.1, 127.0.0.1');
  });

  it('joins repeated X-Forwarded-For headers before appending', async () => {
    const res = await rawRequest(port, 'GET /xff HTTP/1.1\nHost: h\nX-Forwarded-For: 203.0.113.7\nX-Forwarded-For: 198.51.100.1\nConnection: close');
    assert.equal(res.status, 200);
    assert.equal(up.received[up.received.length - 1]!.headers['x-forwarded-for'], '203.0.113.7, 198.51.100.1, 127.0.0.1');
  });

  it('keep-alive: several requests on one client connection all reach the upstream', async () => {
    const before = up.received.length;
    for (let i = 0; i < 5; i++) {
      const res = await request(`${gw.url(port)}/ka/${i}`);
      assert.equal(res.statusCode, 200);
      await res.body.dump();
    }
    assert.equal(up.received.length - before, 5);
  });
});
