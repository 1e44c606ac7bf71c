// Request framing on the gateway's HTTP/1.1 server side (RFC 9112 §6-7): the smuggling vectors (Content-Length with
// Transfer-Encoding, two lengths, codings other than chunked), malformed chunks, extensions and trailers, and what the
// upstream reads of a chunked body. Every refused request must reach the upstream not at all, the connection must
// close after the refusal, and the same gateway must go on serving. These pin the node:http-backed behaviour a
// lean server side must equal (docs/security.md "HTTP/1.1 input", ADR 0092).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { plainRouteSuite, RawClient, SERVER_SIDES, sleep, values } from './proxy-support.ts';
import type { Answer } from './proxy-support.ts';

for (const side of SERVER_SIDES) describe(`HTTP/1.1 request framing (${side.name})`, () => {
  const suite = plainRouteSuite(side, (method, url, body) => `${method} ${url} ${body.length} ${body.toString('latin1')}`);
  const client = (): RawClient => suite.client();

  /** Send `bytes` on a new connection: the answer, after which the server has closed the connection. */
  async function refused(bytes: string): Promise<Answer> {
    const before = suite.up.received.length;
    const c = client();
    c.write(bytes);
    const a = await c.read();
    await c.closed();
    assert.equal(suite.up.received.length, before, 'nothing reached the upstream');
    assert.deepEqual(values(a, 'connection'), ['close']);
    return a;
  }

  /** A request the gateway must refuse with 400 and a JSON error naming llhttp's reason. */
  async function badRequest(bytes: string, reason: RegExp): Promise<void> {
    const a = await refused(bytes);
    assert.equal(a.status, 400, a.body);
    assert.deepEqual(values(a, 'content-type'), ['application/json']);
    const error = JSON.parse(a.body).error;
    assert.equal(error.type, 'bad_request');
    assert.match(error.message, reason);
  }

  const post = (headers: string, body: string): string => `POST /in HTTP/1.1\r\nHost: h\r\n${headers}\r\n\r\n${body}`;

  describe('smuggling vectors are refused before anything goes upstream', () => {
    it('Content-Length and Transfer-Encoding: chunked together: 400 (RFC 9112 §6.3 item 3)', async () => {
      await badRequest(post('Content-Length: 5\r\nTransfer-Encoding: chunked', '3\r\nabc\r\n0\r\n\r\n'), /HPE_INVALID_TRANSFER_ENCODING/);
      // The classic CL.TE desync: the "body" hides a second request. Neither goes upstream.
      await badRequest(post('Content-Length: 4\r\nTransfer-Encoding: chunked', '0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: h\r\n\r\n'), /HPE_INVALID_TRANSFER_ENCODING/);
      await badRequest(post('Transfer-Encoding: chunked\r\nContent-Length: 0', '0\r\n\r\n'), /HPE_INVALID_CONTENT_LENGTH/);
    });

    it('two Content-Length headers, equal or not, and a list: 400', async () => {
      await badRequest(post('Content-Length: 3\r\nContent-Length: 4', 'abcd'), /HPE_UNEXPECTED_CONTENT_LENGTH/);
      await badRequest(post('Content-Length: 3\r\nContent-Length: 3', 'abc'), /HPE_UNEXPECTED_CONTENT_LENGTH/);
      await badRequest(post('Content-Length: 3, 3', 'abc'), /HPE_INVALID_CONTENT_LENGTH/);
    });

    for (const value of ['+3', '-3', '1 2', '3x', '0x3', '', '99999999999999999999999']) {
      it(`Content-Length: ${JSON.stringify(value)}: 400`, async () => {
        await badRequest(post(`Content-Length: ${value}`, 'abc'), /HPE_INVALID_CONTENT_LENGTH/);
      });
    }

    it('Content-Length with trailing whitespace is the number (OWS is not part of the value)', async () => {
      const c = client();
      c.write(post('Content-Length: 3 ', 'abc'));
      const a = await c.read();
      assert.equal(a.status, 200);
      assert.equal(a.body, 'POST /in 3 abc');
    });

    for (const [te, reason] of [
      ['chunked, gzip', 'chunked is not the last coding'],
      ['xchunked', 'not chunked'],
      ['gzip', 'no chunked at all'],
      ['identity', 'identity is no coding (RFC 9112 dropped it)'],
      ['chunked,', 'an empty list member after chunked'],
      ['', 'empty'],
      ['chunked, chunked', 'chunked applied twice'],
    ] as const) {
      it(`Transfer-Encoding: ${JSON.stringify(te)} (${reason}): 400`, async () => {
        // Refused on the head today (the gateway's check, ADR 0092) or by llhttp: either way before anything runs.
        await badRequest(post(`Transfer-Encoding: ${te}`, '3\r\nabc\r\n0\r\n\r\n'), /HPE_INVALID_TRANSFER_ENCODING|transfer coding/);
      });
    }

    it('two Transfer-Encoding: chunked headers (chunked applied twice): 400', async () => {
      await badRequest(post('Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked', '3\r\nabc\r\n0\r\n\r\n'), /HPE_INVALID_TRANSFER_ENCODING/);
    });

    it('Transfer-Encoding: gzip, chunked (a coding the gateway cannot apply upstream): 501, nothing upstream', async () => {
      // llhttp accepts it (chunked is last); forwarding the de-chunked bytes without the gzip coding would hand the
      // upstream a body it reads wrongly. RFC 9112 §6.1: a server SHOULD answer an unknown transfer coding with 501.
      for (const te of ['gzip, chunked', 'deflate,chunked']) {
        const a = await refused(post(`Transfer-Encoding: ${te}`, '3\r\nabc\r\n0\r\n\r\n'));
        assert.equal(a.status, 501, a.body);
        assert.equal(JSON.parse(a.body).error.type, 'not_implemented');
      }
    });

    it('Transfer-Encoding folded onto a continuation line (obs-fold), or with a space before the colon: 400', async () => {
      await badRequest(post('Transfer-Encoding:\r\n chunked', '3\r\nabc\r\n0\r\n\r\n'), /HPE_INVALID_HEADER_TOKEN/);
      await badRequest(post('Transfer-Encoding : chunked', '3\r\nabc\r\n0\r\n\r\n'), /HPE_INVALID_HEADER_TOKEN/);
    });

    it('Transfer-Encoding on an HTTP/1.0 request is faulty framing: 400, and a request behind it is not run', async () => {
      // RFC 9112 §6.1: an HTTP/1.0 message with Transfer-Encoding is treated as having faulty framing and the
      // connection is closed; an HTTP/1.0 sender could not have meant chunked, so a peer may frame it differently.
      const a = await refused('POST /in HTTP/1.0\r\nHost: h\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\nGET /behind HTTP/1.1\r\nHost: h\r\n\r\n');
      assert.equal(a.status, 400, a.body);
      assert.match(JSON.parse(a.body).error.message, /Transfer-Encoding/);
      await sleep(100);
      assert.ok(!suite.up.received.some((r) => r.url === '/behind'), 'the request read behind the refused one did not run');
    });

    it('a request refused on its head gets one answer: the parse error its body then raises writes no second one', async () => {
      // The head is refused (chunked not last) and answered; llhttp then fails on the body it cannot frame. Two
      // answers to one request would desynchronise a client or a proxy in front reading answers in order.
      for (const te of ['xchunked', 'chunked, gzip', 'gzip', 'identity']) {
        const c = client();
        let got = '';
        c.socket.on('data', (chunk: Buffer) => (got += chunk.toString('latin1')));
        c.write(`POST /api/s9 HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: ${te}\r\n\r\n2\r\nab\r\n0\r\n\r\n`);
        await c.closed();
        const statusLines = got.match(/HTTP\/1\.1 \d{3} /g) ?? [];
        assert.deepEqual(statusLines, ['HTTP/1.1 400 '], `Transfer-Encoding: ${te}: ${JSON.stringify(got)}`);
        // Refused on the head by the gateway or by llhttp (`chunked, gzip`): either way, once.
        assert.match(got, /transfer coding|HPE_INVALID_TRANSFER_ENCODING/);
      }
    });
  });

  describe('chunked bodies', () => {
    for (const [size, name] of [
      ['zz', 'of no hex digits'],
      ['-3', 'with a sign'],
      ['0x3', 'with a 0x prefix'],
      ['3 ', 'with a space after it'],
      ['FFFFFFFFFFFFFFFFFFFFF', 'larger than 64 bits'],
    ] as const) {
      it(`a chunk size ${name} (${JSON.stringify(size)}): 400`, async () => {
        await badRequest(post('Transfer-Encoding: chunked', `${size}\r\nabc\r\n0\r\n\r\n`), /HPE_INVALID_CHUNK_SIZE/);
      });
    }

    it('chunk data longer than its size, and bare LF in the chunk framing: 400', async () => {
      await badRequest(post('Transfer-Encoding: chunked', '3\r\nabcd\r\n0\r\n\r\n'), /HPE_STRICT/);
      await badRequest(post('Transfer-Encoding: chunked', '3\nabc\n0\n\n'), /HPE_CR_EXPECTED/);
    });

    it('a control character in a chunk extension: 400', async () => {
      await badRequest(post('Transfer-Encoding: chunked', '3;\x01\r\nabc\r\n0\r\n\r\n'), /HPE_STRICT/);
    });

    it('chunk extensions (plain and quoted) are read and dropped: the upstream gets the data', async () => {
      const c = client();
      c.write(post('Transfer-Encoding: chunked', '3;name=val\r\nabc\r\n2;q="v;al"\r\nde\r\n0;last\r\n\r\n'));
      const a = await c.read();
      assert.equal(a.status, 200);
      assert.equal(a.body, 'POST /in 5 abcde');
      assert.deepEqual(suite.up.received.at(-1)!.headers['transfer-encoding'], 'chunked');
    });

    it('trailers after the last chunk are read; the connection goes on', async () => {
      const c = client();
      c.write(post('Transfer-Encoding: chunked\r\nTrailer: x-sum', '3\r\nabc\r\n0\r\nx-sum: 42\r\n\r\n'));
      const a = await c.read();
      assert.equal(a.status, 200);
      assert.equal(a.body, 'POST /in 3 abc');
      assert.equal(suite.up.received.at(-1)!.headers.trailer, undefined, 'Trailer is hop-by-hop');
      assert.equal((await c.send('GET /next HTTP/1.1\r\nHost: h')).body, 'GET /next 0 ');
    });

    it('a chunked body is forwarded chunked, byte for byte, and the connection carries the next request', async () => {
      const body = Buffer.alloc(70_000);
      for (let i = 0; i < body.length; i++) body[i] = (i * 7 + 3) & 0xff;
      const c = client();
      c.write('POST /chunked HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: Chunked\r\n\r\n');
      // Chunks of odd sizes, upper- and lower-case hex, one with leading zeros.
      const sizes = [1, 0x3ff, 0xabc, 40_000];
      let at = 0;
      for (const [i, size] of sizes.entries()) {
        const hex = i === 1 ? `000${size.toString(16).toUpperCase()}` : size.toString(16);
        c.write(Buffer.concat([Buffer.from(`${hex}\r\n`), body.subarray(at, at + size), Buffer.from('\r\n')]));
        at += size;
      }
      const rest = body.length - at;
      c.write(Buffer.concat([Buffer.from(`${rest.toString(16)}\r\n`), body.subarray(at), Buffer.from('\r\n0\r\n\r\n')]));
      const a = await c.read();
      assert.equal(a.status, 200);
      const got = suite.up.received.at(-1)!;
      assert.equal(got.url, '/chunked');
      assert.equal(got.headers['transfer-encoding'], 'chunked');
      assert.equal(got.headers['content-length'], undefined);
      assert.equal(got.body.length, body.length);
      assert.ok(got.body.equals(body), 'the upstream read the exact bytes');
      assert.equal((await c.send('GET /next HTTP/1.1\r\nHost: h')).body, 'GET /next 0 ');
    });
  });
});
