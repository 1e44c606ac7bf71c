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

  it('an expression that fails at run time removes the header it sets', async () => {
    const res = await request(`${gw.url(port)}/items`, { headers: { 'x-user': 'spoofed' } });
    await res.body.text();
    assert.equal(upstream.received.at(-1)!.headers['x-user'], undefined, 'missing x-client-user: x-user is removed, not passed through');
    assert.equal(res.headers['x-query-a'], undefined);
  });

  it('invalid CEL is a config error at the expression', async () => {
    await assert.rejects(
      gw.gateway.compile(`binds:\n- port: ${port}\n  listeners:\n  - routes:\n    - policies:\n        transformations:\n          request:\n            set: { x-a: "request.((" }\n`),
      /:8:25: invalid CEL expression `request\.\(\(`/,
    );
    await assert.rejects(
      gw.gateway.compile(`binds:\n- port: ${port}\n  listeners:\n  - routes:\n    - policies:\n        transformations:\n          request:\n            set: { x-a: "nosuchvar.x" }\n`),
      /Unknown variable: nosuchvar/,
    );
  });
});
