// ProxyResponse.writeCheckedHead (ADR 0082) against what it replaces: node:http's writeHead of flatRawHeaders' list.
// The same header lines (the upstream's Date and Content-Length may come last) and the same framing and keep-alive
// state, for each kind of request a bind server answers; the cases it leaves to writeHead.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ProxyResponse } from './proxy-response.ts';
import { flatRawHeaders } from './reply-writer.ts';

const { ServerResponse, IncomingMessage } = process.getBuiltinModule('node:http');

type Res = InstanceType<typeof ServerResponse> & { _header: string; _last: boolean; chunkedEncoding: boolean; _hasBody: boolean; _contentLength: unknown; _keepAliveTimeout: number };

function request(method: string, minor: number, connection?: string): InstanceType<typeof IncomingMessage> {
  const req = new IncomingMessage(null as never);
  req.method = method;
  req.httpVersionMajor = 1;
  req.httpVersionMinor = minor;
  if (connection) req.headers.connection = connection;
  return req;
}

/** The two responses as a bind server makes them (node:http sets keep-alive from the request after construction). */
function pair(method: string, minor: number, connection?: string): [Res, Res] {
  const make = (Ctor: typeof ServerResponse): Res => {
    const res = new Ctor(request(method, minor, connection)) as Res;
    res.shouldKeepAlive = minor === 1 ? connection !== 'close' : connection === 'keep-alive';
    res._keepAliveTimeout = 65_000;
    return res;
  };
  return [make(ServerResponse), make(ProxyResponse as unknown as typeof ServerResponse)];
}

const lines = (head: string): string[] => head.split('\r\n').filter(Boolean).sort();
const state = (r: Res) => ({ last: r._last, chunked: r.chunkedEncoding, keepAlive: r.shouldKeepAlive, hasBody: r._hasBody, length: r._contentLength, status: r.statusCode, reason: r.statusMessage });

const ANSWERS: [string, number, string[]][] = [
  ['nginx', 200, ['Server', 'nginx/1.22.1', 'Date', 'Thu, 26 Nov 2026 15:30:00 GMT', 'Content-Type', 'application/json', 'Content-Length', '220', 'Connection', 'keep-alive']],
  ['repeated', 201, ['Set-Cookie', 'a=1', 'X-Multi', 'one', 'Set-Cookie', 'b=2', 'X-Multi', 'two', 'Content-Length', '0']],
  ['chunked', 200, ['Content-Type', 'text/event-stream', 'Transfer-Encoding', 'chunked', 'Keep-Alive', 'timeout=5', 'Trailer', 'x-t']],
  ['until close', 200, ['Content-Type', 'text/plain', 'Connection', 'close']],
  ['no content', 204, ['X-Empty', 'yes']],
  ['not modified', 304, ['ETag', '"v1"', 'Content-Length', '12']],
  ['unknown status', 599, ['content-length', '1', 'expect', 'nothing']],
];

describe('ProxyResponse.writeCheckedHead', () => {
  for (const [what, status, raw] of ANSWERS) {
    for (const [method, minor, connection] of [['GET', 1], ['HEAD', 1], ['POST', 1, 'close'], ['GET', 0], ['GET', 0, 'keep-alive']] as [string, number, string?][]) {
      it(`${what}, ${method} HTTP/1.${minor}${connection ? ` Connection: ${connection}` : ''}: the head and state writeHead makes`, () => {
        const [plain, proxy] = pair(method, minor, connection);
        plain.writeHead(status, flatRawHeaders(raw, undefined));
        assert.equal((proxy as unknown as ProxyResponse).writeCheckedHead(status, raw), true);
        const dated = raw.some((n, i) => i % 2 === 0 && n.toLowerCase() === 'date');
        // A Date node:http adds itself may fall in another second between the two.
        const strip = (l: string[]): string[] => (dated ? l : l.filter((x) => !x.startsWith('Date: ')));
        assert.deepEqual(strip(lines(proxy._header)), strip(lines(plain._header)));
        assert.ok(proxy._header.startsWith(plain._header.slice(0, plain._header.indexOf('\r\n') + 2)), 'the same status line first');
        assert.ok(proxy._header.endsWith('\r\n\r\n'));
        assert.deepEqual(state(proxy), state(plain));
      });
    }
  }

  it('leaves to writeHead: headers set before, a reason phrase set before, a Connection naming other headers', () => {
    const [, a] = pair('GET', 1);
    a.setHeader('x-set', '1');
    assert.equal((a as unknown as ProxyResponse).writeCheckedHead(200, ['Content-Length', '0']), false);
    assert.equal(a.headersSent, false);
    const [, b] = pair('GET', 1);
    b.statusMessage = 'Fine';
    assert.equal((b as unknown as ProxyResponse).writeCheckedHead(200, ['Content-Length', '0']), false);
    const [, c] = pair('GET', 1);
    assert.equal((c as unknown as ProxyResponse).writeCheckedHead(200, ['Connection', 'keep-alive, x-secret', 'X-Secret', 's']), false);
    assert.equal((c as Res)._header, null);
    assert.equal(c.statusCode, 200, 'nothing changed but what writeHead sets again');
  });

  it('a second head is refused (the caller then answers as for a head written already)', () => {
    const [, a] = pair('GET', 1);
    assert.equal((a as unknown as ProxyResponse).writeCheckedHead(200, ['Content-Length', '0']), true);
    assert.equal((a as unknown as ProxyResponse).writeCheckedHead(200, ['Content-Length', '0']), false);
  });
});
