// The plain route writes the answer's head checked by the lean client's parser without node:http checking it again
// (ADR 0082, kernel/runtime/proxy-response.ts). These tests read the bytes a client gets, from an upstream that
// writes exact bytes, on keep-alive connections: status, repeated headers in order, the upstream's Date and
// Content-Length once, the gateway's own Connection/Keep-Alive, chunked answers, HEAD, 204/304 without a body, a
// client's `Connection: close`, HTTP/1.0 clients, and the answers that take node:http's general path.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startRoutesGateway } from '../helpers/gateway.ts';
import { startRawUpstream } from '../helpers/raw-upstream.ts';
import type { RawUpstream } from '../helpers/raw-upstream.ts';
import type { RoutesGateway } from '../helpers/gateway.ts';
import { RawClient, values } from './proxy-support.ts';

const DATE = 'Wed, 01 Jan 2025 00:00:00 GMT';

/** The upstream's answer to each path, byte for byte (`HEAD` requests get the head alone). */
function answer(method: string, path: string): string {
  const body = (text: string): string => (method === 'HEAD' ? '' : text);
  switch (path) {
    case '/cookies':
      return `HTTP/1.1 201 Created\r\nServer: up\r\nSet-Cookie: a=1; Path=/\r\nX-Multi: one\r\nSet-Cookie: b=2\r\nX-Multi: two\r\nContent-Type: text/plain\r\nDate: ${DATE}\r\nContent-Length: 5\r\nConnection: keep-alive\r\nKeep-Alive: timeout=5\r\n\r\n${body('hello')}`;
    case '/listed':
      return `HTTP/1.1 200 OK\r\nConnection: keep-alive, X-Secret\r\nX-Secret: s\r\nX-Kept: k\r\nContent-Length: 2\r\n\r\n${body('ok')}`;
    case '/chunked':
      return `HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n${method === 'HEAD' ? '' : '3\r\nabc\r\n4\r\ndefg\r\n0\r\n\r\n'}`;
    case '/nocontent':
      return 'HTTP/1.1 204 No Content\r\nX-Empty: yes\r\n\r\n';
    case '/notmodified':
      return `HTTP/1.1 304 Not Modified\r\nETag: "v1"\r\nDate: ${DATE}\r\n\r\n`;
    case '/lowercase':
      return 'HTTP/1.1 418 I\'m a teapot\r\ncontent-type: text/plain\r\ncontent-length: 3\r\n\r\ntea';
    default:
      return 'HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n';
  }
}

describe('the plain route writes the upstream head it checked (ADR 0082)', () => {
  let gw: RoutesGateway;
  let upstream: RawUpstream;
  const clients: RawClient[] = [];
  const client = (): RawClient => {
    const c = new RawClient(gw.port);
    clients.push(c);
    return c;
  };

  before(async () => {
    upstream = await startRawUpstream(answer);
    gw = await startRoutesGateway([{ name: 'plain', backends: [{ host: upstream.host }] }]);
  });
  after(async () => {
    for (const c of clients) c.destroy();
    await gw?.stop();
    await upstream?.close();
  });

  it('status, repeated headers in their order, the upstream Date and Content-Length once, the gateway keep-alive', async () => {
    const c = client();
    for (let i = 0; i < 2; i++) {
      const a = await c.send('GET /cookies HTTP/1.1\r\nHost: test');
      assert.equal(a.status, 201);
      assert.deepEqual(values(a, 'set-cookie'), ['a=1; Path=/', 'b=2']);
      assert.deepEqual(values(a, 'x-multi'), ['one', 'two']);
      assert.deepEqual(values(a, 'date'), [DATE]);
      assert.deepEqual(values(a, 'content-length'), ['5']);
      assert.deepEqual(values(a, 'server'), ['up']);
      assert.deepEqual(values(a, 'content-type'), ['text/plain']);
      // The upstream's connection headers are its own: the client gets the gateway's.
      assert.deepEqual(values(a, 'connection'), ['keep-alive']);
      assert.deepEqual(values(a, 'keep-alive'), ['timeout=65']);
      assert.equal(a.body, 'hello');
      // Names lower-cased, as node:http's writeHead of the flat list wrote them.
      assert.ok(a.headers.every(([n]) => n === n.toLowerCase()));
    }
  });

  it('the status line carries node:http reason phrase; lower-case upstream names pass as they are', async () => {
    const a = await client().send('GET /lowercase HTTP/1.1\r\nHost: test');
    assert.equal(a.status, 418);
    assert.deepEqual(values(a, 'content-type'), ['text/plain']);
    assert.equal(a.body, 'tea');
    assert.equal(values(a, 'date').length, 1, 'node:http adds a Date when the upstream sent none');
  });

  it('a Connection header naming another header: that header is dropped (the general path)', async () => {
    const c = client();
    const a = await c.send('GET /listed HTTP/1.1\r\nHost: test');
    assert.equal(a.status, 200);
    assert.deepEqual(values(a, 'x-secret'), []);
    assert.deepEqual(values(a, 'x-kept'), ['k']);
    assert.deepEqual(values(a, 'connection'), ['keep-alive']);
    assert.equal(a.body, 'ok');
    // The connection stays usable.
    assert.equal((await c.send('GET /cookies HTTP/1.1\r\nHost: test')).body, 'hello');
  });

  it('a chunked answer is chunked to the client, then the connection carries the next request', async () => {
    const c = client();
    const a = await c.send('GET /chunked HTTP/1.1\r\nHost: test');
    assert.deepEqual(values(a, 'transfer-encoding'), ['chunked']);
    assert.deepEqual(values(a, 'content-length'), []);
    assert.equal(a.body, 'abcdefg');
    assert.equal((await c.send('GET /cookies HTTP/1.1\r\nHost: test')).body, 'hello');
  });

  it('HEAD: the head with the upstream Content-Length, no body, and the connection goes on', async () => {
    const c = client();
    const a = await c.send('HEAD /cookies HTTP/1.1\r\nHost: test', { head: true });
    assert.equal(a.status, 201);
    assert.deepEqual(values(a, 'content-length'), ['5']);
    assert.deepEqual(values(a, 'transfer-encoding'), []);
    const b = await c.send('HEAD /chunked HTTP/1.1\r\nHost: test', { head: true });
    assert.equal(b.status, 200);
    assert.deepEqual(values(b, 'content-length'), []);
    const next = await c.send('GET /cookies HTTP/1.1\r\nHost: test');
    assert.equal(next.status, 201);
    assert.equal(next.body, 'hello');
  });

  it('204 and 304: no body, no framing header made up, and the connection goes on', async () => {
    const c = client();
    const a = await c.send('GET /nocontent HTTP/1.1\r\nHost: test');
    assert.equal(a.status, 204);
    assert.deepEqual(values(a, 'x-empty'), ['yes']);
    assert.deepEqual(values(a, 'transfer-encoding'), []);
    assert.deepEqual(values(a, 'content-length'), []);
    const b = await c.send('GET /notmodified HTTP/1.1\r\nHost: test');
    assert.equal(b.status, 304);
    assert.deepEqual(values(b, 'etag'), ['"v1"']);
    assert.deepEqual(values(b, 'date'), [DATE]);
    assert.deepEqual(values(b, 'transfer-encoding'), []);
    const next = await c.send('GET /cookies HTTP/1.1\r\nHost: test');
    assert.equal(next.body, 'hello', 'no stray body bytes before the next answer');
  });

  it('a client Connection: close gets Connection: close and the connection is closed', async () => {
    const c = client();
    const a = await c.send('GET /cookies HTTP/1.1\r\nHost: test\r\nConnection: close');
    assert.equal(a.body, 'hello');
    assert.deepEqual(values(a, 'connection'), ['close']);
    assert.deepEqual(values(a, 'keep-alive'), []);
    await c.closed();
  });

  it('HTTP/1.0 clients: Connection: close; a chunked answer is sent unchunked and ended by the close', async () => {
    const c = client();
    const a = await c.send('GET /cookies HTTP/1.0\r\nHost: test');
    assert.equal(a.status, 201);
    assert.deepEqual(values(a, 'content-length'), ['5']);
    assert.deepEqual(values(a, 'connection'), ['close']);
    assert.equal(a.body, 'hello');
    await c.closed();
    const d = client();
    const b = await d.send('GET /chunked HTTP/1.0\r\nHost: test');
    assert.deepEqual(values(b, 'transfer-encoding'), []);
    assert.deepEqual(values(b, 'content-length'), []);
    assert.equal(b.body, 'abcdefg');
  });

  it('an HTTP/1.0 client asking for keep-alive keeps the connection when the answer has a length', async () => {
    const c = client();
    const a = await c.send('GET /cookies HTTP/1.0\r\nHost: test\r\nConnection: keep-alive');
    assert.deepEqual(values(a, 'connection'), ['keep-alive']);
    assert.equal(a.body, 'hello');
    assert.equal((await c.send('GET /cookies HTTP/1.0\r\nHost: test\r\nConnection: keep-alive')).body, 'hello');
  });
});
