import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { kClosing, requestInputProblem, shouldUpgrade, UNSUPPORTED_CODING } from './request-input.ts';
import type { ClosingSocket } from './request-input.ts';

/** The fields of a request node:http hands over that the checks read. */
const req = (url: string, headers: Record<string, string>, version = '1.1'): IncomingMessage =>
  ({ url, headers, httpVersionMajor: Number(version[0]), httpVersionMinor: Number(version[2]) }) as unknown as IncomingMessage;

describe('request input refused beyond llhttp (ADR 0092)', () => {
  it('Transfer-Encoding: chunked alone (any case, spaces, empty members) passes', () => {
    for (const te of ['chunked', 'Chunked', 'CHUNKED', ' chunked ', ', chunked', '\tchunked']) assert.equal(requestInputProblem(req('/x', { 'transfer-encoding': te })), undefined, te);
  });

  it('a coding before chunked is 501; chunked not last, twice or on HTTP/1.0 is 400', () => {
    for (const te of ['gzip, chunked', 'deflate,chunked', 'x-custom , chunked']) assert.equal(requestInputProblem(req('/x', { 'transfer-encoding': te })), UNSUPPORTED_CODING, te);
    for (const te of ['gzip', 'xchunked', 'chunked, gzip', 'identity', 'chunked, chunked', '']) {
      const problem = requestInputProblem(req('/x', { 'transfer-encoding': te }));
      assert.ok(problem !== undefined && problem !== UNSUPPORTED_CODING, te);
    }
    assert.match(requestInputProblem(req('/x', { 'transfer-encoding': 'chunked' }, '1.0'))!, /not HTTP\/1\.1/);
  });

  it('a fragment anywhere in the target is refused; no Transfer-Encoding and no `#` is nothing', () => {
    for (const url of ['/x#f', '/x?q=1#f', 'http://h/x#', '#']) assert.match(requestInputProblem(req(url, {}))!, /fragment/, url);
    assert.equal(requestInputProblem(req('/x?q=%23', {})), undefined);
  });

  it('Upgrade: h2c (in any case, alone or in a list), or an upgrade with a body, is declined and closes after; websocket is an upgrade', () => {
    const up = (upgrade: string | undefined, more: Record<string, string> = {}): [boolean, unknown] => {
      const r = { headers: { ...(upgrade === undefined ? {} : { upgrade }), ...more }, socket: {} } as unknown as IncomingMessage;
      return [shouldUpgrade(r), (r.socket as ClosingSocket)[kClosing] === r];
    };
    for (const u of ['h2c', 'H2C', 'websocket, h2c', 'h2c ,foo']) assert.deepEqual(up(u), [false, true], u);
    assert.deepEqual(up('websocket', { 'content-length': '5' }), [false, true]);
    assert.deepEqual(up('websocket', { 'transfer-encoding': 'chunked' }), [false, true]);
    for (const u of ['websocket', 'WebSocket', 'h2cx', 'xh2c']) assert.deepEqual(up(u), [true, false], u);
    assert.deepEqual(up('websocket', { 'content-length': '0' }), [true, false]);
    assert.deepEqual(up(undefined), [false, false]);
  });
});
