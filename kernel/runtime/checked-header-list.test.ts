// isCheckedHeaderList: which edited answer header lists may skip node:http's per-header checks (ADR 0082), and that
// for such a list writeCheckedHead makes the head and state writeHead makes.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isCheckedHeaderList } from './checked-header-list.ts';
import { ProxyResponse } from './proxy-response.ts';

const { ServerResponse, IncomingMessage } = process.getBuiltinModule('node:http');

/** nginx's answer after the bench's policies route: responseHeaderModifier and cors edits, queued CORS headers. */
const EDITED = [
  'server', 'nginx/1.22.1', 'date', 'Thu, 26 Nov 2026 15:30:00 GMT', 'content-type', 'application/json', 'content-length', '220',
  'x-served-by', 'switchyard', 'vary', 'Origin', 'access-control-allow-origin', 'https://bench.example', 'access-control-expose-headers', 'x-served-by',
  'x-obs-text', 'caf\u00e9\tok',
];

describe('isCheckedHeaderList', () => {
  it('takes lower-case tokens with values node:http writes unchanged', () => {
    assert.equal(isCheckedHeaderList(EDITED), true);
    assert.equal(isCheckedHeaderList([]), true);
  });
  const refused: [string, unknown[]][] = [
    ['an upper-case name (writeHead writes it as given)', ['X-Upper', 'v']],
    ['a name that is not a token', ['x bad', 'v']],
    ['an empty name', ['', 'v']],
    ['a control character in a value', ['x-a', 'a\u0001b']],
    ['a line break in a value', ['x-a', 'a\r\nx-injected: 1']],
    ['a character beyond Latin-1', ['x-a', 'a\u2026']],
    ['a number value', ['x-a', 1]],
    ['an undefined value', ['x-a', undefined]],
    ['a Content-Length that is not digits', ['content-length', '12, 12']],
  ];
  for (const [what, entry] of refused) {
    it(`leaves ${what} to writeHead`, () => {
      assert.equal(isCheckedHeaderList([...EDITED, ...entry]), false);
    });
  }
});

describe('writeCheckedHead of an edited list', () => {
  for (const method of ['GET', 'HEAD']) {
    it(`${method}: the head and state writeHead makes`, () => {
      const make = (Ctor: typeof ServerResponse) => {
        const req = new IncomingMessage(null as never);
        req.method = method;
        req.httpVersionMajor = 1;
        req.httpVersionMinor = 1;
        const res = new Ctor(req) as InstanceType<typeof ServerResponse> & { _header: string; _hasBody: boolean; _contentLength: unknown; _keepAliveTimeout: number; chunkedEncoding: boolean };
        res.shouldKeepAlive = true;
        res._keepAliveTimeout = 65_000;
        return res;
      };
      const plain = make(ServerResponse);
      const proxy = make(ProxyResponse as unknown as typeof ServerResponse);
      plain.writeHead(200, EDITED);
      assert.equal((proxy as unknown as ProxyResponse).writeCheckedHead(200, EDITED), true);
      assert.equal(proxy._header, plain._header);
      const state = (r: typeof plain) => [r.chunkedEncoding, r.shouldKeepAlive, r._hasBody, r._contentLength, r.statusCode, r.statusMessage];
      assert.deepEqual(state(proxy), state(plain));
    });
  }
});
