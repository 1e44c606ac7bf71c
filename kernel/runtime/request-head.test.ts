// The lean server side's request-head parser (ADR 0088): what it accepts, as node:http would read it, and the heads it
// leaves to node:http (null). test/e2e/lean-http-differential.test.ts holds the whole server side to node:http's bytes.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MAX_HEAD_BYTES, parseRequestHead } from './request-head.ts';

const parse = (text: string | Buffer) => {
  const buf = typeof text === 'string' ? Buffer.from(text, 'latin1') : text;
  return parseRequestHead(buf, 0, buf.length);
};

describe('parseRequestHead', () => {
  it('reads method, target, headers as node:http does (names lower-cased, values trimmed), and where the head ends', () => {
    const text = 'POST /v1/chat?x=1&y=%20 HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\nX-A:  spaced \t\r\nx-empty:\r\nContent-Length: 12\r\n\r\n{"a":"body"}';
    const head = parse(text)!;
    assert.equal(head.method, 'POST');
    assert.equal(head.url, '/v1/chat?x=1&y=%20');
    assert.deepEqual(head.rawHeaders, ['Host', 'gw', 'Content-Type', 'application/json', 'X-A', 'spaced', 'x-empty', '', 'Content-Length', '12']);
    assert.deepEqual({ ...head.headers }, { host: 'gw', 'content-type': 'application/json', 'x-a': 'spaced', 'x-empty': '', 'content-length': '12' });
    assert.equal(head.bodyLength, 12);
    assert.equal(head.close, false);
    assert.equal(text.slice(head.end), '{"a":"body"}');
  });

  it('reads Connection: close and keep-alive in any case; no Content-Length is no body', () => {
    assert.equal(parse('GET / HTTP/1.1\r\nHost: h\r\nConnection: Close\r\n\r\n')!.close, true);
    const ka = parse('GET / HTTP/1.1\r\nHost: h\r\nconnection: Keep-Alive\r\n\r\n')!;
    assert.equal(ka.close, false);
    assert.equal(ka.bodyLength, 0);
  });

  it('parses a head at an offset (a pipelined request) and stops at its blank line', () => {
    const buf = Buffer.from('GET /a HTTP/1.1\r\nHost: h\r\n\r\nGET /b HTTP/1.1\r\nHost: h\r\n\r\n', 'latin1');
    const first = parseRequestHead(buf, 0, buf.length)!;
    const second = parseRequestHead(buf, first.end, buf.length)!;
    assert.equal(second.url, '/b');
    assert.equal(second.end, buf.length);
  });

  const handedOff: Record<string, string | Buffer> = {
    'an incomplete head': 'GET / HTTP/1.1\r\nHost: h\r\n',
    'an incomplete request line': 'GET / HTTP/1.',
    'HTTP/1.0': 'GET / HTTP/1.0\r\nHost: h\r\n\r\n',
    'HTTP/2 preface': 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n',
    'an unknown method': 'FOO / HTTP/1.1\r\nHost: h\r\n\r\n',
    'a lower-case method': 'get / HTTP/1.1\r\nHost: h\r\n\r\n',
    CONNECT: 'CONNECT h:443 HTTP/1.1\r\nHost: h:443\r\n\r\n',
    'an absolute-form target': 'GET http://h/ HTTP/1.1\r\nHost: h\r\n\r\n',
    'an asterisk target': 'OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n',
    'a fragment': 'GET /a#b HTTP/1.1\r\nHost: h\r\n\r\n',
    'a quote in the target': 'GET /a"b HTTP/1.1\r\nHost: h\r\n\r\n',
    'two spaces after the method': 'GET  / HTTP/1.1\r\nHost: h\r\n\r\n',
    'a bare LF ending the request line': 'GET / HTTP/1.1\nHost: h\r\n\r\n',
    'a bare LF ending a header': 'GET / HTTP/1.1\r\nHost: h\n\r\n',
    'a bare CR in a value': 'GET / HTTP/1.1\r\nHost: h\r\nX: a\rb\r\n\r\n',
    'a NUL in a value': 'GET / HTTP/1.1\r\nHost: h\r\nX: a\u0000b\r\n\r\n',
    'DEL in a value': 'GET / HTTP/1.1\r\nHost: h\r\nX: a\u007fb\r\n\r\n',
    'obs-text in a value': Buffer.from('GET / HTTP/1.1\r\nHost: h\r\nX: caf\u00e9\r\n\r\n', 'latin1'),
    'obs-fold': 'GET / HTTP/1.1\r\nHost: h\r\nX: a\r\n b\r\n\r\n',
    'a space before the colon': 'GET / HTTP/1.1\r\nHost: h\r\nX : a\r\n\r\n',
    'an empty name': 'GET / HTTP/1.1\r\nHost: h\r\n: a\r\n\r\n',
    'no Host': 'GET / HTTP/1.1\r\nX: a\r\n\r\n',
    'two Hosts': 'GET / HTTP/1.1\r\nHost: h\r\nhost: i\r\n\r\n',
    'a name twice': 'GET / HTTP/1.1\r\nHost: h\r\nX: 1\r\nx: 2\r\n\r\n',
    'two Content-Lengths': 'POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\na',
    'a Content-Length list': 'POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1, 1\r\n\r\na',
    'a signed Content-Length': 'POST / HTTP/1.1\r\nHost: h\r\nContent-Length: +1\r\n\r\na',
    'an empty Content-Length': 'POST / HTTP/1.1\r\nHost: h\r\nContent-Length:\r\n\r\n',
    'a huge Content-Length': 'POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1234567890123456\r\n\r\n',
    'Transfer-Encoding': 'POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
    'Content-Length with Transfer-Encoding': 'POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n',
    Expect: 'POST / HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\n',
    Upgrade: 'GET / HTTP/1.1\r\nHost: h\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n',
    'Connection: Upgrade alone': 'GET / HTTP/1.1\r\nHost: h\r\nConnection: Upgrade\r\n\r\n',
    'Connection naming a header': 'GET / HTTP/1.1\r\nHost: h\r\nConnection: close, x-a\r\n\r\n',
    'HTTP2-Settings': 'GET / HTTP/1.1\r\nHost: h\r\nHTTP2-Settings: AAA\r\n\r\n',
    '__proto__': 'GET / HTTP/1.1\r\nHost: h\r\n__proto__: x\r\n\r\n',
    'a leading CRLF': '\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n',
    'a head over the size limit': `GET / HTTP/1.1\r\nHost: h\r\nX: ${'a'.repeat(MAX_HEAD_BYTES)}\r\n\r\n`,
    'over 100 header lines': `GET / HTTP/1.1\r\nHost: h\r\n${Array.from({ length: 100 }, (_, i) => `X-${i}: v\r\n`).join('')}\r\n`,
  };
  for (const [name, text] of Object.entries(handedOff)) {
    it(`leaves to node:http: ${name}`, () => assert.equal(parse(text), null));
  }

  it('an own property named like an Object.prototype member is a header like any other', () => {
    const head = parse('GET / HTTP/1.1\r\nHost: h\r\nconstructor: c\r\ntoString: t\r\n\r\n')!;
    assert.equal(head.headers.constructor, 'c');
    assert.equal(Object.hasOwn(head.headers, 'tostring'), true);
  });
});
