import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { H1ParseError, H1ResponseParser, MAX_HEAD } from './h1-parser.ts';
import type { ResponseSink } from './h1-parser.ts';

interface Seen {
  heads: { status: number; raw: string[] }[];
  body: string;
  ended: boolean;
  trailers: string[] | null;
}

function sink(): ResponseSink & Seen {
  return {
    heads: [],
    body: '',
    ended: false,
    trailers: null,
    head(status, raw) {
      this.heads.push({ status, raw });
    },
    data(chunk) {
      this.body += chunk.toString('latin1');
    },
    end(trailers) {
      this.ended = true;
      this.trailers = trailers;
    },
    last(chunk) {
      this.body += chunk.toString('latin1');
      this.ended = true;
    },
  };
}

/** Feed `text` in pieces of `step` bytes (1: byte by byte); returns what the sink saw. */
function parse(text: string | Buffer, step = Infinity, head = false): Seen & { extra: boolean; parser: H1ResponseParser } {
  const s = sink();
  const parser = new H1ResponseParser();
  parser.expect(s, head);
  const buf = Buffer.isBuffer(text) ? text : Buffer.from(text, 'latin1');
  let extra = false;
  for (let at = 0; at < buf.length; at += step) if (!parser.execute(buf.subarray(at, Math.min(buf.length, at + step)))) extra = true;
  return Object.assign(s, { extra, parser });
}

const rejects = (text: string, why: RegExp, step = Infinity): void => {
  assert.throws(() => parse(text, step), (err: unknown) => err instanceof H1ParseError && why.test(err.message), `${JSON.stringify(text.slice(0, 80))} must be refused`);
};

describe('H1ResponseParser: well-formed answers', () => {
  const plain = 'HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 11\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\n\r\nhello world';
  it('a Content-Length body, whatever the reads split (head straddling reads, byte by byte)', () => {
    for (const step of [Infinity, 1, 2, 3, 7, 30, 61]) {
      const seen = parse(plain, step);
      assert.equal(seen.heads.length, 1, `step ${step}`);
      assert.equal(seen.heads[0]!.status, 200);
      assert.deepEqual(seen.heads[0]!.raw, ['Content-Type', 'text/plain', 'Content-Length', '11', 'Set-Cookie', 'a=1', 'Set-Cookie', 'b=2']);
      assert.equal(seen.body, 'hello world', `step ${step}`);
      assert.ok(seen.ended && seen.parser.keepAlive && !seen.extra);
    }
  });

  it('a chunked body with extensions and trailers, byte by byte', () => {
    const text = 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;name=val\r\nhello\r\n6\r\n world\r\n0\r\nX-Checksum: abc\r\n\r\n';
    for (const step of [Infinity, 1, 4]) {
      const seen = parse(text, step);
      assert.equal(seen.body, 'hello world');
      assert.deepEqual(seen.trailers, ['X-Checksum', 'abc']);
      assert.ok(seen.ended && seen.parser.keepAlive);
    }
  });

  it('1xx answers are skipped; the final one is handed on', () => {
    const seen = parse('HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok', 5);
    assert.deepEqual(seen.heads.map((h) => h.status), [201]);
    assert.equal(seen.body, 'ok');
  });

  it('no body for HEAD, 204 and 304, whatever Content-Length says', () => {
    assert.ok(parse('HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\n', Infinity, true).ended);
    assert.ok(parse('HTTP/1.1 204 No Content\r\nContent-Length: 50\r\n\r\n').ended);
    assert.ok(parse('HTTP/1.1 304 Not Modified\r\nContent-Length: 50\r\n\r\n').ended);
  });

  it('a body without framing is read until the connection closes, and the connection is not reused', () => {
    const seen = parse('HTTP/1.1 200 OK\r\n\r\nsome bytes');
    assert.ok(!seen.ended);
    assert.equal(seen.parser.closed(), true);
    assert.ok(seen.ended && !seen.parser.keepAlive);
    assert.equal(seen.body, 'some bytes');
  });

  it('Connection: close, HTTP/1.0 and Keep-Alive: timeout=', () => {
    assert.equal(parse('HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n').parser.keepAlive, false);
    assert.equal(parse('HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n').parser.keepAlive, false);
    assert.equal(parse('HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n').parser.keepAlive, true);
    assert.equal(parse('HTTP/1.1 200 OK\r\nKeep-Alive: timeout=5, max=100\r\nContent-Length: 0\r\n\r\n').parser.keepAliveHintMs, 5000);
  });
});

describe('H1ResponseParser: malformed and hostile answers are refused', () => {
  it('invalid status lines', () => {
    for (const line of ['HTTP/1.1 2000 OK', 'HTTP/2.0 200 OK', 'HTTP/1.1 200 O\0K', 'ICY 200 OK', 'HTTP/1.1 099 Low', 'HTTP/1.1  200 OK', 'http/1.1 200 OK', 'HTTP/1.1 20x OK', 'HTTP/1.1 600 Nope', 'HTTP/1.1 999 Beyond']) {
      rejects(`${line}\r\nContent-Length: 0\r\n\r\n`, /status line/);
    }
  });

  it('invalid header bytes: space before the colon, obs-fold, bare CR, NUL, no colon, empty name', () => {
    rejects('HTTP/1.1 200 OK\r\nContent-Length : 5\r\n\r\nhello', /header name/);
    rejects('HTTP/1.1 200 OK\r\nX-A: 1\r\n  folded\r\nContent-Length: 0\r\n\r\n', /header name/);
    rejects('HTTP/1.1 200 OK\r\nX-A: a\rContent-Length: 99\r\nContent-Length: 0\r\n\r\n', /header value/);
    rejects('HTTP/1.1 200 OK\r\nX-A: a\0b\r\nContent-Length: 0\r\n\r\n', /header value/);
    rejects('HTTP/1.1 200 OK\r\nX-A: a\nContent-Length: 0\r\n\r\n', /header value/);
    rejects('HTTP/1.1 200 OK\r\nno colon here\r\n\r\n', /header name/);
    rejects('HTTP/1.1 200 OK\r\n: empty\r\n\r\n', /header name/);
  });

  it('duplicate or conflicting Content-Length, and Content-Length with Transfer-Encoding', () => {
    rejects('HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello', /duplicate Content-Length/);
    rejects('HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 50\r\n\r\nhello', /duplicate Content-Length/);
    rejects('HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n', /with Transfer-Encoding/);
    rejects('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n', /with Transfer-Encoding/);
  });

  it('Content-Length that is not digits alone', () => {
    for (const v of ['+5', '5, 5', '0x5', '-1', '5a', '', '1e3', '9999999999999999']) rejects(`HTTP/1.1 200 OK\r\nContent-Length: ${v}\r\n\r\nhello`, /Content-Length/);
  });

  it('a head larger than 16 KiB, whether or not its end arrived', () => {
    const big = `HTTP/1.1 200 OK\r\nX-Big: ${'a'.repeat(MAX_HEAD)}\r\nContent-Length: 0\r\n\r\n`;
    rejects(big, /larger than 16 KiB/);
    rejects(big, /larger than 16 KiB/, 1000);
    rejects(`HTTP/1.1 200 OK\r\nX-Big: ${'a'.repeat(MAX_HEAD)}`, /larger than 16 KiB/, 4096);
  });

  it('a head of exactly 16 KiB dripped one byte per read is parsed; one byte more is refused', () => {
    const start = 'HTTP/1.1 200 OK\r\nX-Big: ';
    const rest = '\r\nContent-Length: 2\r\n\r\n';
    const fill = MAX_HEAD - start.length - rest.length;
    const seen = parse(`${start}${'a'.repeat(fill)}${rest}ok`, 1);
    assert.equal(seen.heads.length, 1);
    assert.deepEqual(seen.heads[0]!.raw, ['X-Big', 'a'.repeat(fill), 'Content-Length', '2']);
    assert.equal(seen.body, 'ok');
    assert.ok(seen.ended && !seen.extra);
    rejects(`${start}${'a'.repeat(fill + 1)}${rest}ok`, /larger than 16 KiB/, 1);
    // The blank line straddling reads of uneven sizes, after a 1xx, with the body in the same read as the head's end.
    const again = parse(`HTTP/1.1 100 Continue\r\n\r\n${start}${'b'.repeat(fill)}${rest}ok`, 997);
    assert.equal(again.heads[0]!.raw[1], 'b'.repeat(fill));
    assert.equal(again.body, 'ok');
  });

  it('a trailer line of 16 KiB dripped one byte per read is read; one byte more is refused', () => {
    const te = 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n';
    const value = 'v'.repeat(MAX_HEAD - 'X-T: '.length - 1); // the line with its CR is MAX_HEAD bytes
    const seen = parse(`${te}X-T: ${value}\r\n\r\n`, 1);
    assert.deepEqual(seen.trailers, ['X-T', value]);
    assert.equal(seen.body, 'hello');
    assert.ok(seen.ended);
    rejects(`${te}X-T: ${value}v\r\n\r\n`, /too long/, 1);
  });

  it('bad chunk framing: size, extension, data longer than its size, bare LF, trailer bytes', () => {
    const te = 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n';
    rejects(`${te}zz\r\nhello\r\n0\r\n\r\n`, /chunk size/);
    rejects(`${te}5 \r\nhello\r\n0\r\n\r\n`, /chunk size/);
    rejects(`${te}-5\r\nhello\r\n0\r\n\r\n`, /chunk size/);
    rejects(`${te}\r\nhello\r\n0\r\n\r\n`, /chunk size/);
    rejects(`${te}fffffffffffffff\r\nhello\r\n0\r\n\r\n`, /chunk size/);
    rejects(`${te}5;a=\0\r\nhello\r\n0\r\n\r\n`, /chunk extension/);
    rejects(`${te}3\r\nhello\r\n0\r\n\r\n`, /longer than its size/);
    rejects(`${te}5\nhello\r\n0\r\n\r\n`, /bare LF/);
    rejects(`${te}5\r\nhello\r\n0\r\nX Bad: 1\r\n\r\n`, /trailer/);
    rejects(`${te}5\r\nhello\r\n0\r\nX-Bad: a\0\r\n\r\n`, /trailer/);
    rejects(`${te}${'1;'.padEnd(MAX_HEAD + 10, 'x')}\r\n`, /too long/, 512);
  });

  it('a head ended by bare LFs is refused at once (not left waiting for a CRLF CRLF)', () => {
    rejects('HTTP/1.1 200 OK\nContent-Length: 2\n\nok', /bare LF/);
    rejects('HTTP/1.1 200 OK\r\nContent-Length: 2\n\nok', /bare LF/, 3);
  });

  it('a 101 to a request that asked for no upgrade', () => {
    rejects('HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n', /101/);
  });

  it('bytes after the answer ended are reported (the connection is not reused)', () => {
    assert.equal(parse('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\n\r\n').extra, true);
    assert.equal(parse('HTTP/1.1 204 No Content\r\n\r\nsmuggled').extra, true);
  });

  it('an answer cut short by the connection closing is not complete', () => {
    const seen = parse('HTTP/1.1 200 OK\r\nContent-Length: 20\r\n\r\nhello');
    assert.equal(seen.parser.closed(), false);
    assert.ok(!seen.ended);
    const chunked = parse('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n');
    assert.equal(chunked.parser.closed(), false);
  });

  it('Transfer-Encoding whose last coding is not chunked is read until close', () => {
    const seen = parse('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\n5\r\nhello');
    assert.equal(seen.body, '5\r\nhello');
    assert.equal(seen.parser.keepAlive, false);
  });
});

describe('H1ResponseParser: names remembered from the last answer on the connection', () => {
  it('the same names are read again, different ones at the same place too, and a near match is still refused', () => {
    const s = sink();
    const parser = new H1ResponseParser();
    const answer = (head: string): void => {
      parser.expect(s, false);
      parser.execute(Buffer.from(`HTTP/1.1 200 OK\r\n${head}\r\n\r\n`, 'latin1'));
    };
    answer('Content-Type: a\r\nX-One: 1\r\nContent-Length: 0');
    answer('Content-Type: b\r\nX-One: 2\r\nContent-Length: 0');
    answer('Content-Type: c\r\nX-OneMore: 3\r\nX-On: 4\r\nContent-Length: 0');
    assert.deepEqual(s.heads.map((h) => h.raw), [
      ['Content-Type', 'a', 'X-One', '1', 'Content-Length', '0'],
      ['Content-Type', 'b', 'X-One', '2', 'Content-Length', '0'],
      ['Content-Type', 'c', 'X-OneMore', '3', 'X-On', '4', 'Content-Length', '0'],
    ]);
    // A framing name's meaning follows the name at that place, not the last answer's.
    const keep = (head: string): boolean => {
      answer(head);
      return parser.keepAlive;
    };
    assert.equal(keep('Connection: close\r\nContent-Length: 0'), false);
    assert.equal(keep('Connectiox: close\r\nContent-Length: 0'), true);
    assert.equal(keep('CONNECTION: close\r\nContent-Length: 0'), false);
    assert.equal(keep('CONNECTION: keep-alive\r\nContent-Length: 0'), true);
    for (const bad of ['Content-Type : d', 'Content-Type', ' Content-Type: d', 'Content-Type\u00e9: d', 'Content-Type\0: d']) {
      const p = new H1ResponseParser();
      p.expect(sink(), false);
      p.execute(Buffer.from('HTTP/1.1 200 OK\r\nContent-Type: a\r\nContent-Length: 0\r\n\r\n', 'latin1'));
      p.expect(sink(), false);
      assert.throws(() => p.execute(Buffer.from(`HTTP/1.1 200 OK\r\n${bad}\r\nContent-Length: 0\r\n\r\n`, 'latin1')), H1ParseError, JSON.stringify(bad));
    }
  });
});
