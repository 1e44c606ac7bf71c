// The request head's grammar on the gateway's HTTP/1.1 server side (RFC 9112 §2-5): line endings, header field
// syntax, size limits, methods, request-target forms, versions and Host. Refused heads reach the upstream not at all
// and close the connection; the same gateway goes on serving. These pin the node:http-backed behaviour a lean server
// side must equal (docs/security.md "HTTP/1.1 input", ADR 0092).
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { describe, it } from 'node:test';
import type { ReceivedRequest } from '../helpers/upstream.ts';
import { logRecords } from '../helpers/gateway.ts';
import { plainRouteSuite, RawClient, SERVER_SIDES, values, waitFor } from './proxy-support.ts';
import type { Answer } from './proxy-support.ts';

for (const side of SERVER_SIDES) describe(`HTTP/1.1 request heads (${side.name})`, () => {
  const suite = plainRouteSuite(side, (method, url, body) => `${method} ${url} ${body.length}`);
  const client = (): RawClient => suite.client();

  /** Send `bytes` on a new connection: the answer, after which the server has closed the connection. */
  async function refused(bytes: string, status = 400): Promise<Answer> {
    const before = suite.up.received.length;
    const c = client();
    c.write(bytes);
    const a = await c.read();
    await c.closed();
    assert.equal(a.status, status, a.body);
    assert.equal(suite.up.received.length, before, 'nothing reached the upstream');
    assert.deepEqual(values(a, 'connection'), ['close']);
    return a;
  }

  /** Refused with `status` and a JSON error whose message matches `reason`. */
  async function refusedWith(bytes: string, reason: RegExp, status = 400): Promise<void> {
    const a = await refused(bytes, status);
    assert.deepEqual(values(a, 'content-type'), ['application/json']);
    assert.match(JSON.parse(a.body).error.message, reason);
  }

  /** Served on a new connection: the answer and what the upstream received. */
  async function served(bytes: string): Promise<{ a: Answer; got: ReceivedRequest; c: RawClient }> {
    const before = suite.up.received.length;
    const c = client();
    c.write(bytes);
    const a = await c.read();
    assert.equal(a.status, 200, a.body);
    assert.equal(suite.up.received.length, before + 1);
    return { a, got: suite.up.received.at(-1)!, c };
  }

  const get = (headers: string): string => `GET /x HTTP/1.1\r\nHost: h\r\n${headers}\r\n\r\n`;

  describe('line endings and header syntax', () => {
    it('obs-fold (a header line starting with a space or tab): 400 (RFC 9112 §5.2)', async () => {
      await refusedWith(get('X-A: one\r\n two'), /HPE_INVALID_HEADER_TOKEN/);
      await refusedWith(get('X-A: one\r\n\ttwo'), /HPE_INVALID_HEADER_TOKEN/);
    });

    it('bare LF line endings: 400 (node is strict where RFC 9112 §2.2 allows lenience)', async () => {
      await refusedWith('GET /x HTTP/1.1\nHost: h\nX-A: 1\n\n', /HPE_INVALID_VERSION/);
      await refusedWith('GET /x HTTP/1.1\r\nHost: h\nX-A: 1\r\n\r\n', /HPE_CR_EXPECTED/);
    });

    it('bare CR, between lines or inside a value: 400 (RFC 9112 §2.2)', async () => {
      await refusedWith('GET /x HTTP/1.1\r\nHost: h\rX-A: 1\r\n\r\n', /HPE_LF_EXPECTED/);
      await refusedWith(get('X-A: a\rb'), /HPE_LF_EXPECTED/);
    });

    it('whitespace between the field name and the colon: 400 (RFC 9112 §5.1)', async () => {
      await refusedWith(get('X-A : 1'), /HPE_INVALID_HEADER_TOKEN/);
      await refusedWith(get('X-A\t: 1'), /HPE_INVALID_HEADER_TOKEN/);
    });

    for (const [name, ch] of [
      ['NUL', '\x00'],
      ['SOH', '\x01'],
      ['ESC', '\x1b'],
      ['DEL', '\x7f'],
    ] as const) {
      it(`${name} in a field value: 400 (RFC 9110 §5.5)`, async () => {
        await refusedWith(get(`X-A: a${ch}b`), /HPE_INVALID_HEADER_TOKEN/);
      });
    }

    it('HTAB and obs-text (bytes 0x80-0xFF) in a value pass to the upstream as they are', async () => {
      const { got } = await served(get('X-Tab: a\tb\r\nX-Latin: caf\xe9'));
      assert.equal(got.headers['x-tab'], 'a\tb');
      // The upstream's node:http decodes latin1: the byte went through unchanged.
      assert.equal(got.headers['x-latin'], 'caf\xe9');
    });

    it('fields reach the upstream with names lower-cased, values trimmed, empty values kept, repeats joined or first kept', async () => {
      const { got } = await served(
        get('X-Multi: a\r\nX-Multi: b\r\nCookie: c=1\r\nCookie: d=2\r\nAuthorization: Bearer one\r\nAuthorization: Bearer two\r\nContent-Type: text/a\r\nContent-Type: text/b\r\nUser-Agent: u1\r\nUser-Agent: u2\r\nX-Ws:    v v   \r\nX-Empty:\r\nX-UPPER-Case: Q'),
      );
      const names = got.rawHeaders.filter((_, i) => i % 2 === 0);
      assert.ok(names.every((n) => n === n.toLowerCase()), names.join());
      // One line each upstream: list fields joined with ", ", Cookie with "; ", and node:http's singletons keep the
      // first (what the gateway's own policies saw is what the upstream gets).
      assert.deepEqual(got.rawHeaders.filter((_, i, a) => i % 2 === 1 && a[i - 1] === 'x-multi'), ['a, b']);
      assert.equal(got.headers.cookie, 'c=1; d=2');
      assert.deepEqual(got.rawHeaders.filter((_, i, a) => i % 2 === 1 && a[i - 1] === 'authorization'), ['Bearer one']);
      assert.equal(got.headers['content-type'], 'text/a');
      assert.equal(got.headers['user-agent'], 'u1');
      assert.equal(got.headers['x-ws'], 'v v');
      assert.equal(got.headers['x-empty'], '');
      assert.equal(got.headers['x-upper-case'], 'Q');
    });

    for (const [line, what] of [
      ['X(A): 1', 'a delimiter in the name'],
      ['X A: 1', 'a space in the name'],
      ['X"A": 1', 'a quote in the name'],
      [': 1', 'an empty name'],
      ['XA', 'no colon'],
    ] as const) {
      it(`a header line with ${what} (${JSON.stringify(line)}): 400`, async () => {
        await refusedWith(get(line), /HPE_INVALID_HEADER_TOKEN/);
      });
    }
  });

  describe('size limits (node:http: 16 KiB of head)', () => {
    it('a request line of 15,000 bytes is served; one of 20,000 gets 431', async () => {
      const { got } = await served(`GET /${'a'.repeat(15_000)} HTTP/1.1\r\nHost: h\r\n\r\n`);
      assert.equal(got.url.length, 15_001);
      await refusedWith(`GET /${'a'.repeat(20_000)} HTTP/1.1\r\nHost: h\r\n\r\n`, /HPE_HEADER_OVERFLOW/, 431);
    });

    it('a header block of 15,000 bytes is served; one of 17,000 gets 431', async () => {
      const { got } = await served(get(`X-A: ${'b'.repeat(15_000)}`));
      assert.equal(got.headers['x-a']?.length, 15_000);
      await refusedWith(get(`X-A: ${'b'.repeat(17_000)}`), /HPE_HEADER_OVERFLOW/, 431);
    });

    it('500 header lines are served; 1,000 (short ones, far below 16 KiB) get 431', async () => {
      const lines = (n: number): string => Array.from({ length: n }, (_, i) => `a:${i % 10}`).join('\r\n');
      const { got } = await served(get(lines(500)));
      assert.equal(String(got.headers.a).split(', ').length, 500);
      await refusedWith(get(lines(1000)), /HPE_HEADER_OVERFLOW/, 431);
    });
  });

  describe('request line', () => {
    for (const line of ['G@T /x HTTP/1.1', 'FOO /x HTTP/1.1', 'get /x HTTP/1.1', 'GET\t/x HTTP/1.1']) {
      it(`method of ${JSON.stringify(line)}: 400 (node knows a fixed list of methods)`, async () => {
        await refusedWith(`${line}\r\nHost: h\r\n\r\n`, /HPE_INVALID_METHOD/);
      });
    }

    it('absolute-form target: its authority is the Host, the upstream gets the origin-form path (RFC 9112 §3.2.2)', async () => {
      const { got } = await served('GET http://h/abs?q=1 HTTP/1.1\r\nHost: other.example\r\n\r\n');
      assert.equal(got.url, '/abs?q=1');
      assert.equal(got.headers.host, 'h');
      assert.equal(got.headers['x-forwarded-host'], 'h');
    });

    it('OPTIONS * and GET *: 400, the gateway answers no asterisk-form request', async () => {
      for (const line of ['OPTIONS * HTTP/1.1', 'GET * HTTP/1.1']) {
        await refusedWith(`${line}\r\nHost: h\r\n\r\n`, /must be a path starting with `\/`/);
      }
    });

    for (const [line, what] of [
      ['GET  HTTP/1.1', 'an empty target'],
      ['GET HTTP/1.1', 'no target'],
      ['GET a/b HTTP/1.1', 'a relative target'],
      ['GET h:80 HTTP/1.1', 'authority form on GET'],
      ['GET /a\x01b HTTP/1.1', 'a control character in the target'],
    ] as const) {
      it(`${what} (${JSON.stringify(line)}): 400`, async () => {
        await refusedWith(`${line}\r\nHost: h\r\n\r\n`, /HPE_INVALID_URL/);
      });
    }

    it('raw bytes above 0x7F in the target: 400 (a client percent-encodes them)', async () => {
      await refusedWith('GET /caf\xc3\xa9 HTTP/1.1\r\nHost: h\r\n\r\n', /HPE_INVALID_URL/);
    });

    it('methods node:http knows pass through as they are (WebDAV, QUERY, PURGE, TRACE included)', async () => {
      const methods = ['PUT', 'DELETE', 'PATCH', 'OPTIONS', 'TRACE', 'QUERY', 'PROPFIND', 'PURGE', 'LINK'];
      const c = client();
      for (const m of methods) {
        const a = await c.send(`${m} /m HTTP/1.1\r\nHost: h`);
        assert.equal(a.body, `${m} /m 0`);
        assert.equal(suite.up.received.at(-1)!.method, m);
      }
    });

    it('absolute-form with an upper-case or https scheme is read as absolute-form', async () => {
      for (const target of ['HTTP://h/up', 'https://h/tls']) {
        const { got } = await served(`GET ${target} HTTP/1.1\r\nHost: other\r\n\r\n`);
        assert.equal(got.url, target.slice(target.indexOf('/', 8)));
        assert.equal(got.headers.host, 'h');
        assert.equal(got.headers['x-forwarded-proto'], 'http', 'the scheme is the connection\'s, not the target\'s');
      }
    });

    it('a space inside the target: 400', async () => {
      await refusedWith('GET /a b HTTP/1.1\r\nHost: h\r\n\r\n', /HPE_INVALID_CONSTANT/);
    });

    it('a fragment in the target (path or query): 400, never matched or forwarded (ADR 0092)', async () => {
      // Envoy refuses `#` too: `/admin#x` would miss a `/admin` route and reach an upstream that serves /admin.
      await refusedWith('GET /x#frag HTTP/1.1\r\nHost: h\r\n\r\n', /fragment/);
      await refusedWith('GET /x?q=1#frag HTTP/1.1\r\nHost: h\r\n\r\n', /fragment/);
      await refusedWith('GET http://h/x#frag HTTP/1.1\r\nHost: h\r\n\r\n', /fragment/);
    });

    it('empty lines before the request line are skipped (RFC 9112 §2.2); two spaces after the method are tolerated', async () => {
      const first = await served('\r\n\r\nGET /lead HTTP/1.1\r\nHost: h\r\n\r\n');
      assert.equal(first.got.url, '/lead');
      const second = await served('GET  /double HTTP/1.1\r\nHost: h\r\n\r\n');
      assert.equal(second.got.url, '/double');
    });

    it('CONNECT: 405 method_not_allowed and the connection closed, logged with its target and counted; nothing upstream (ADR 0166)', async () => {
      const a = await refused('CONNECT h:80 HTTP/1.1\r\nHost: h:80\r\n\r\n', 405);
      assert.equal(JSON.parse(a.body).error.type, 'method_not_allowed');
      // Tunnel bytes sent right behind the head are not read as a request either.
      await refused('CONNECT h:80 HTTP/1.1\r\nHost: h:80\r\nContent-Length: 5\r\n\r\nGET /x HTTP/1.1\r\nHost: h\r\n\r\n', 405);
      await waitFor(() => logRecords(suite.gw).some((r) => r['http.method'] === 'CONNECT'), 5_000, 'the CONNECT log line');
      const line = logRecords(suite.gw).find((r) => r['http.method'] === 'CONNECT')!;
      assert.equal(line['http.status'], 405);
      assert.equal(line['http.path'], 'h:80', 'the authority-form target');
      const metrics = await (await fetch(`${suite.gw.statsUrl}/metrics`)).text();
      assert.ok(metrics.split('\n').some((l) => l.startsWith('switchyard_requests_total{') && l.includes('status="405"')), 'counted with its status');
    });

    it('CONNECT or an upgrade pipelined behind a request: answered after that request\'s answer, not into it', async () => {
      const upgrade = 'GET /a%2Fb HTTP/1.1\r\nHost: h\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n';
      for (const [second, status] of [['CONNECT h:80 HTTP/1.1\r\nHost: h:80\r\n\r\n', 405], [upgrade, 400]] as const) {
        const c = client();
        c.write(`GET /first HTTP/1.1\r\nHost: h\r\n\r\nGET /second HTTP/1.1\r\nHost: h\r\n\r\n${second}`);
        for (const path of ['/first', '/second']) {
          const a = await c.read();
          assert.equal(a.status, 200);
          assert.equal(a.body, `GET ${path} 0`);
        }
        const next = await c.read();
        assert.equal(next.status, status, next.body);
        await c.closed();
      }
    });

    it('CONNECT, and an upgrade refused before a route: closed by the gateway after the answer even when the client keeps its side open', async () => {
      const upgrade = 'GET /a%2Fb HTTP/1.1\r\nHost: h\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n';
      for (const [head, status] of [['CONNECT h:80 HTTP/1.1\r\nHost: h:80\r\n\r\n', 'HTTP/1.1 405 '], [upgrade, 'HTTP/1.1 400 ']] as const) {
        // A client that never ends its side (half-open): the socket must not stay open on the gateway for ever.
        const socket = connect({ port: suite.port, host: '127.0.0.1', allowHalfOpen: true });
        socket.write(head);
        let text = '';
        socket.setEncoding('latin1');
        socket.on('data', (c: string) => (text += c));
        socket.on('error', () => undefined);
        // Bytes sent after the gateway's FIN: a socket it closed answers them with a reset; one it left open takes them.
        socket.once('end', () => {
          socket.write('more');
          setTimeout(() => socket.write('more'), 200).unref();
        });
        const closed = await new Promise<boolean>((resolve) => {
          socket.once('close', () => resolve(true));
          setTimeout(() => resolve(false), 3_000);
        });
        socket.destroy();
        assert.ok(text.startsWith(status), text);
        assert.ok(closed, `the gateway closed the connection after ${status.trim()}`);
      }
    });
  });

  describe('versions', () => {
    it('HTTP/1.0 without keep-alive: answered, then the connection is closed; the upstream gets HTTP/1.1', async () => {
      const { a, c, got } = await served('GET /ten HTTP/1.0\r\nHost: h\r\n\r\n');
      assert.deepEqual(values(a, 'connection'), ['close']);
      assert.equal(a.body, 'GET /ten 0');
      await c.closed();
      assert.equal(got.headers.connection, 'keep-alive', 'the gateway keeps its own upstream connection');
    });

    it('HTTP/1.0 with Connection: keep-alive: the connection stays open for the next request', async () => {
      const { a, c } = await served('GET /ten HTTP/1.0\r\nHost: h\r\nConnection: keep-alive\r\n\r\n');
      assert.deepEqual(values(a, 'connection'), ['keep-alive']);
      const next = await c.send('GET /again HTTP/1.0\r\nHost: h\r\nConnection: keep-alive');
      assert.equal(next.body, 'GET /again 0');
    });

    it('HTTP/1.0 without Host: served, the upstream gets the backend address as Host', async () => {
      const { got, c } = await served('GET /nohost HTTP/1.0\r\n\r\n');
      assert.equal(got.headers.host, `127.0.0.1:${suite.up.port}`);
      await c.closed();
    });

    it('an HTTP/0.9-style line (no version): node reads it as HTTP/0.9, answered as HTTP/1.0 would be, then closed', async () => {
      // Lenient but harmless: no header can ride along, and the connection closes after the one answer.
      const { a, c, got } = await served('GET /nine\r\n\r\n');
      assert.match(a.line, /^HTTP\/1\.1 200 /);
      assert.deepEqual(values(a, 'connection'), ['close']);
      assert.equal(got.url, '/nine');
      await c.closed();
    });

    it('HTTP/2.0 in a request line: served as HTTP/1.0 would be (llhttp accepts 2.0), then closed', async () => {
      const { a, c } = await served('GET /two HTTP/2.0\r\nHost: h\r\n\r\n');
      assert.deepEqual(values(a, 'connection'), ['close']);
      await c.closed();
    });

    it('HTTP/1.2, HTTP/3.0 and a lower-case `http/1.1`: 400', async () => {
      await refusedWith('GET /x HTTP/1.2\r\nHost: h\r\n\r\n', /HPE_INVALID_VERSION/);
      await refusedWith('GET /x HTTP/3.0\r\nHost: h\r\n\r\n', /HPE_INVALID_VERSION/);
      await refusedWith('GET /x http/1.1\r\nHost: h\r\n\r\n', /HPE_INVALID_CONSTANT/);
    });

    it('the HTTP/2 connection preface behind an HTTP/1.1 request: that one answered, then 400 (h2c only opens a connection, ADR 0158)', async () => {
      const { c } = await served(`${get('')}PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n`);
      const a = await c.read();
      await c.closed();
      assert.equal(a.status, 400, a.body);
      assert.match(JSON.parse(a.body).error.message, /HPE_PAUSED_H2_UPGRADE/);
    });
  });

  describe('Host', () => {
    it('HTTP/1.1 without Host: 400 (node:http, RFC 9112 §3.2), nothing upstream', async () => {
      await refused('GET /x HTTP/1.1\r\nX-A: 1\r\n\r\n');
    });

    it('two Host headers: 400', async () => {
      await refusedWith('GET /x HTTP/1.1\r\nHost: h\r\nHost: h2\r\n\r\n', /more than one Host/);
      await refusedWith('GET /x HTTP/1.1\r\nHost: h\r\nhost: h\r\n\r\n', /more than one Host/);
    });

    it('an empty Host is served (a target URI without authority, RFC 9112 §3.2): the upstream gets the backend address', async () => {
      const { got } = await served('GET /x HTTP/1.1\r\nHost:\r\n\r\n');
      assert.equal(got.headers.host, `127.0.0.1:${suite.up.port}`);
    });
  });
});
