import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { request } from 'undici';
import { startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';

describe('transformations', () => {
  let gw: RunningGateway;
  let port: number;
  let upstream: TestUpstream;
  before(async () => {
    port = await freePort();
    upstream = await startUpstream();
    gw = await startGateway({
      backends: [
        {
          name: 'svc',
          host: `127.0.0.1:${upstream.port}`,
          policies: {
            transformations: {
              request: {
                set: {
                  'x-static': '"v1"',
                  'x-user': 'request.headers["x-client-user"]',
                  'x-path': 'request.method + " " + request.path',
                  'x-source': 'source.address',
                },
                add: { 'x-multi': '"second"' },
                remove: ['x-drop-me'],
              },
            },
          },
        },
      ],
      binds: [
        {
          port,
          listeners: [
            {
              routes: [
                {
                  name: 'values',
                  matches: [{ path: { pathPrefix: '/values' } }],
                  policies: {
                    transformations: {
                      request: { set: { 'x-q': 'request.query["q"]' }, add: { 'x-q-added': 'request.query["q"]' } },
                      response: { set: { 'x-q': 'request.query["q"]' }, add: { 'x-q-added': 'request.query["q"]' } },
                    },
                  },
                  backends: [{ host: `127.0.0.1:${upstream.port}` }],
                },
                {
                  name: 'add-host',
                  matches: [{ path: { pathPrefix: '/add-host' } }],
                  policies: { transformations: { request: { add: { host: '"added.internal"' } } } },
                  backends: [{ host: `127.0.0.1:${upstream.port}` }],
                },
                {
                  name: 'svc',
                  policies: { transformations: { response: { set: { 'x-answered-for': 'request.path', 'x-query-a': 'request.query["a"]' } } } },
                  backends: [{ backend: 'svc' }],
                },
              ],
            },
          ],
        },
      ],
    });
  });
  after(async () => {
    await gw.stop();
    await upstream.close();
  });

  it('sets request headers from CEL on the named backend; literals are quoted CEL strings', async () => {
    const res = await request(`${gw.url(port)}/items?a=7`, { headers: { 'x-client-user': 'alice', 'x-drop-me': '1', 'x-multi': 'first' } });
    assert.equal(res.statusCode, 200);
    await res.body.text();
    const got = upstream.received.at(-1)!.headers;
    assert.equal(got['x-static'], 'v1');
    assert.equal(got['x-user'], 'alice');
    assert.equal(got['x-path'], 'GET /items');
    assert.equal(got['x-source'], '127.0.0.1');
    assert.equal(got['x-multi'], 'first, second');
    assert.equal(got['x-drop-me'], undefined);
    assert.equal(res.headers['x-answered-for'], '/items');
    assert.equal(res.headers['x-query-a'], '7');
  });

  it('a value that cannot be a header (CR, LF, controls) counts as a failed expression, on both sides', async () => {
    // The query is decoded for CEL: a client's `%0D%0A` turned the whole answer into a 500 (node:http refused the
    // header) and, on the request side, into a 502 blamed on the upstream, counted against its health.
    for (const q of ['a%0D%0AInjected:%201', 'nul%00', 'bell%07']) {
      const res = await request(`${gw.url(port)}/values?q=${q}`, { headers: { 'x-q': 'client' } });
      assert.equal(res.statusCode, 200, q);
      await res.body.text();
      const got = upstream.received.at(-1)!;
      assert.equal(got.url, `/values?q=${q}`);
      assert.equal(got.headers['x-q'], undefined, 'set: the header is removed');
      assert.equal(got.headers['x-q-added'], undefined, 'add: nothing added');
      assert.equal(res.headers['x-q'], undefined);
      assert.equal(res.headers['x-q-added'], undefined);
    }
  });

  it('a value beyond Latin-1 goes out as its UTF-8 bytes, on both sides', async () => {
    const res = await request(`${gw.url(port)}/values?q=%E2%98%83%C3%A9`);
    assert.equal(res.statusCode, 200);
    await res.body.text();
    const utf8 = Buffer.from('\u2603\u00e9', 'utf8').toString('latin1');
    assert.equal(upstream.received.at(-1)!.headers['x-q'], utf8);
    assert.equal(res.headers['x-q'], utf8);
  });

  it('adding Host rewrites the authority, as setting it does', async () => {
    const res = await request(`${gw.url(port)}/add-host`);
    await res.body.text();
    assert.equal(upstream.received.at(-1)!.headers.host, 'added.internal');
  });

  it('an expression that fails at run time removes the header it sets', async () => {
    const res = await request(`${gw.url(port)}/items`, { headers: { 'x-user': 'spoofed' } });
    await res.body.text();
    assert.equal(upstream.received.at(-1)!.headers['x-user'], undefined, 'missing x-client-user: x-user is removed, not passed through');
    assert.equal(res.headers['x-query-a'], undefined);
  });

  it('invalid CEL is a config error at the expression', async () => {
    await assert.rejects(
      gw.gateway.compile(`binds:\n- port: ${port}\n  listeners:\n  - routes:\n    - policies:\n        transformations:\n          request:\n            set: { x-a: "request.((" }\n`),
      /:8:34: invalid CEL expression `request\.\(\(`/,
    );
    await assert.rejects(
      gw.gateway.compile(`binds:\n- port: ${port}\n  listeners:\n  - routes:\n    - policies:\n        transformations:\n          request:\n            set: { x-a: "nosuchvar.x" }\n`),
      /:8:26: .*unknown variable `nosuchvar`/,
    );
  });
});
