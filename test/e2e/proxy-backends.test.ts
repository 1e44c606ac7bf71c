import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { request } from 'undici';
import type { RunningGateway } from '../helpers/gateway.ts';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';
import { startGatewayOnFreePorts } from './proxy-support.ts';

/** An upstream that answers with its own name. */
const namedUpstream = (name: string) =>
  startUpstream((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain', 'x-served-by': name });
    res.end(name);
  });

describe('named backends', () => {
  let gw: RunningGateway;
  let a: TestUpstream;
  let b: TestUpstream;
  let port: number;

  before(async () => {
    a = await namedUpstream('a');
    b = await namedUpstream('b');
    ({ gw, ports: [port] } = await startGatewayOnFreePorts(1, ([port]) => ({
      backends: [
        {
          name: 'svc-a',
          host: `127.0.0.1:${a.port}`,
          policies: {
            requestHeaderModifier: { set: { 'x-from': 'named', 'x-named-only': 'yes' } },
            responseHeaderModifier: { set: { 'x-named-response': 'yes' } },
          },
        },
        { name: 'svc-b', host: `http://127.0.0.1:${b.port}` },
      ],
      binds: [
        {
          port,
          listeners: [
            {
              routes: [
                { name: 'to-a', matches: [{ path: { pathPrefix: '/a' } }], backends: [{ backend: 'svc-a' }] },
                { name: 'to-b', matches: [{ path: { pathPrefix: '/b' } }], backends: [{ backend: 'svc-b' }] },
                {
                  name: 'override',
                  matches: [{ path: { pathPrefix: '/override' } }],
                  backends: [{ backend: 'svc-a', policies: { requestHeaderModifier: { set: { 'x-from': 'reference' } } } }],
                },
                {
                  name: 'route-and-backend',
                  matches: [{ path: { pathPrefix: '/layered' } }],
                  policies: { requestHeaderModifier: { set: { 'x-route': 'yes' } } },
                  backends: [{ backend: 'svc-a' }],
                },
              ],
            },
          ],
        },
      ],
    })));
  });
  after(async () => {
    await gw?.stop();
    await a?.close();
    await b?.close();
  });

  const get = async (path: string) => {
    const res = await request(`${gw.url(port)}${path}`);
    return { status: res.statusCode, headers: res.headers, body: await res.body.text() };
  };

  it('`backend: name` forwards to the named backend', async () => {
    assert.equal((await get('/a/1')).body, 'a');
    assert.equal((await get('/b/1')).body, 'b');
    assert.equal(a.received.at(-1)!.url, '/a/1');
    assert.equal(b.received.at(-1)!.url, '/b/1');
  });

  it("the named backend's policies apply (request and response)", async () => {
    const res = await get('/a/policies');
    assert.equal(res.headers['x-named-response'], 'yes');
    const h = a.received.at(-1)!.headers;
    assert.equal(h['x-from'], 'named');
    assert.equal(h['x-named-only'], 'yes');
  });

  it('a named backend without policies adds nothing', async () => {
    const res = await get('/b/plain');
    assert.equal(res.headers['x-named-response'], undefined);
    assert.equal(b.received.at(-1)!.headers['x-from'], undefined);
  });

  it("the reference's `policies` override the named backend's per key", async () => {
    const res = await get('/override/1');
    assert.equal(res.status, 200);
    const h = a.received.at(-1)!.headers;
    // requestHeaderModifier is replaced as a whole by the reference's...
    assert.equal(h['x-from'], 'reference');
    assert.equal(h['x-named-only'], undefined);
    // ...while keys the reference does not set still come from the named backend.
    assert.equal(res.headers['x-named-response'], 'yes');
  });

  it('route policies and named-backend policies both run', async () => {
    await get('/layered/1');
    const h = a.received.at(-1)!.headers;
    assert.equal(h['x-route'], 'yes');
    assert.equal(h['x-from'], 'named');
  });
});

describe('weighted backends', () => {
  let gw: RunningGateway;
  const ups: TestUpstream[] = [];
  let port: number;
  let zeroOnlyPort: number;

  before(async () => {
    ups.push(await namedUpstream('heavy'), await namedUpstream('light'), await namedUpstream('never'));
    ({ gw, ports: [port, zeroOnlyPort] } = await startGatewayOnFreePorts(2, ([port, zeroOnlyPort]) => ({
      backends: [{ name: 'never', host: `127.0.0.1:${ups[2]!.port}` }],
      binds: [
        {
          port,
          listeners: [
            {
              routes: [
                {
                  name: 'weighted',
                  backends: [
                    { host: `127.0.0.1:${ups[0]!.port}`, weight: 3 },
                    { host: `127.0.0.1:${ups[1]!.port}`, weight: 1 },
                    { backend: 'never', weight: 0 },
                  ],
                },
              ],
            },
          ],
        },
        { port: zeroOnlyPort, listeners: [{ routes: [{ name: 'zero', backends: [{ backend: 'never', weight: 0 }] }] }] },
      ],
    })));
  });
  after(async () => {
    await gw?.stop();
    for (const u of ups) await u.close();
  });

  it('weights 3:1 split ~400 requests within a reasonable band; weight 0 is never chosen', async () => {
    const counts: Record<string, number> = { heavy: 0, light: 0, never: 0 };
    const total = 400;
    // A few at a time, so the test is quick without flooding the loopback.
    for (let i = 0; i < total; i += 20) {
      const bodies = await Promise.all(
        Array.from({ length: 20 }, async () => {
          const res = await request(`${gw.url(port)}/w`);
          assert.equal(res.statusCode, 200);
          return res.body.text();
        }),
      );
      for (const name of bodies) counts[name]!++;
    }
    assert.equal(counts.never, 0, 'weight 0 must never be chosen');
    assert.equal(ups[2]!.received.length, 0);
    assert.equal(counts.heavy! + counts.light!, total);
    // Expected 300:100; the binomial standard deviation is ~8.7, so ±60 is ~7σ (never flaky, still catches 1:1 or 1:3).
    assert.ok(counts.heavy! >= 240 && counts.heavy! <= 360, `heavy got ${counts.heavy} of ${total}`);
  });

  it('a route whose only backend has weight 0 answers 500 JSON (nothing to send to)', async () => {
    const res = await request(`${gw.url(zeroOnlyPort)}/z`);
    assert.equal(res.statusCode, 500);
    const body = (await res.body.json()) as { error: { type: string } };
    assert.equal(body.error.type, 'no_backend');
    assert.equal(ups[2]!.received.length, 0);
  });
});
