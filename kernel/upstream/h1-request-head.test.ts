import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { H1ArgumentError, requestBytes, requestHead } from './h1-request-head.ts';

describe('requestHead: header names', () => {
  it('framing and connection headers are the client\'s own whatever their case; other names are kept as written', () => {
    const head = requestHead('POST', '/a?b=1', {
      'X-Mixed-Case': 'one',
      'Content-Length': '5',
      'TRANSFER-ENCODING': 'chunked',
      Connection: 'close',
      'keep-alive': 'timeout=5',
      'Proxy-Connection': 'x',
      te: 'trailers',
      'x-lower': ['a', 'b'],
    } as never);
    assert.equal(head, 'POST /a?b=1 HTTP/1.1\r\nconnection: keep-alive\r\nX-Mixed-Case: one\r\nx-lower: a\r\nx-lower: b\r\n');
  });

  it('a name that is not a token is refused', () => {
    for (const name of ['', 'x y', 'x:y', 'x\u00e9', 'x\r\ny', 'x\u0100', '(x)']) {
      assert.throws(() => requestHead('GET', '/', { [name]: 'v' }), (err: unknown) => err instanceof H1ArgumentError && /header key/.test(err.message), JSON.stringify(name));
    }
  });

  it('a value with a control character is refused', () => {
    for (const v of ['a\r\nb', 'a\0', 'a\x7f', 'a\u0100']) assert.throws(() => requestHead('GET', '/', { 'x-v': v }), H1ArgumentError);
  });
});

describe('requestBytes: the head, framing and body in one Buffer', () => {
  const framing = 'content-length: 3\r\n\r\n';
  const body = Buffer.from('abc');
  const cases: Record<string, unknown>[] = [
    { host: 'up', 'content-type': 'application/json', 'x-request-id': 'r-1', 'x-obs': 'caf\u00e9\tok' },
    { 'X-Mixed-Case': 'one', 'Content-Length': '5', 'TRANSFER-ENCODING': 'chunked', Connection: 'close', 'keep-alive': 'timeout=5', te: 'trailers', 'x-blank': undefined },
    { 'x-lower': ['a', 'b'], 'x-num': 7 }, // not all strings: the string builder's path
    {},
  ];
  it('the same bytes as requestHead + framing + body, whatever the headers', () => {
    for (const headers of cases) {
      const expected = Buffer.concat([Buffer.from(requestHead('POST', '/p?q=1', headers as never) + framing, 'latin1'), body]);
      assert.deepEqual(requestBytes('POST', '/p?q=1', headers as never, framing, body), expected, JSON.stringify(headers));
      assert.deepEqual(requestBytes('GET', '/', headers as never, '\r\n', null), Buffer.from(`${requestHead('GET', '/', headers as never)}\r\n`, 'latin1'));
    }
  });

  it('refuses what requestHead refuses', () => {
    for (const name of ['', 'x y', 'x:y', 'x\u00e9', 'x\r\ny']) assert.throws(() => requestBytes('GET', '/', { [name]: 'v' }, '\r\n', null), /header key/);
    for (const v of ['a\r\nb', 'a\0', 'a\x7f', 'a\u0100', 'a\nb']) assert.throws(() => requestBytes('GET', '/', { 'x-v': v }, '\r\n', null), H1ArgumentError, JSON.stringify(v));
    assert.throws(() => requestBytes('G T', '/', {}, '\r\n', null), /method/);
    assert.throws(() => requestBytes('GET', '/a b', {}, '\r\n', null), /path/);
  });
});
