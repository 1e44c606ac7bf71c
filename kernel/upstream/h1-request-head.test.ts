import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { H1ArgumentError, requestHead } from './h1-request-head.ts';

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
