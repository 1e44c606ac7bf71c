import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { request } from 'undici';
import { oneListenerConfig, startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';

describe('requestHeaderModifier and responseHeaderModifier', () => {
  let gw: RunningGateway;
  let port: number;
  let deadPort: number;
  let upstream: TestUpstream;
  const responseMod = { add: { 'x-added': 'r1' }, set: { 'x-upstream': 'overwritten', 'x-set': 's' }, remove: ['x-remove-me'] };
  before(async () => {
    port = await freePort();
    deadPort = await freePort();
    upstream = await startUpstream((_req, res) => {
      res.setHeader('x-upstream', 'original');
      res.setHeader('x-added', 'from-upstream');
      res.setHeader('x-remove-me', 'secret');
      res.end('ok');
    });
    gw = await startGateway(oneListenerConfig(port, [
      {
        name: 'limited',
        matches: [{ path: { pathPrefix: '/limited' } }],
        policies: { responseHeaderModifier: responseMod, localRateLimit: [{ maxTokens: 1, tokensPerFill: 1, fillInterval: '1h' }] },
        backends: [{ host: `127.0.0.1:${upstream.port}` }],
      },
      { name: 'dead', matches: [{ path: { pathPrefix: '/dead' } }], policies: { responseHeaderModifier: responseMod }, backends: [{ host: `127.0.0.1:${deadPort}` }] },
      { name: 'host-set', matches: [{ path: { pathPrefix: '/host' } }], policies: { requestHeaderModifier: { set: { host: 'virtual.internal' } } }, backends: [{ host: `127.0.0.1:${upstream.port}` }] },
      {
        name: 'rewritten-then-backend-edit',
        matches: [{ path: { pathPrefix: '/layered' } }],
        policies: { urlRewrite: { authority: { full: 'rewritten.internal' } } },
        backends: [{ host: `127.0.0.1:${upstream.port}`, policies: { requestHeaderModifier: { set: { 'x-backend': '1' } }, transformations: { request: { set: { 'x-tf': '"1"' } } } } }],
      },
      { name: 'host-add', matches: [{ path: { pathPrefix: '/add-host' } }], policies: { requestHeaderModifier: { add: { host: 'added.internal' } } }, backends: [{ host: `127.0.0.1:${upstream.port}` }] },
      {
        name: 'main',
        policies: {
          requestHeaderModifier: { add: { 'x-multi': 'added', 'x-new': 'n' }, set: { 'x-over': 'gateway' }, remove: ['x-secret', 'x-new'] },
          responseHeaderModifier: responseMod,
        },
        backends: [{ host: `127.0.0.1:${upstream.port}` }],
      },
    ]));
  });
  after(async () => {
    await gw.stop();
    await upstream.close();
  });

  it('request: add appends and keeps existing, set overwrites, remove drops (applied add → set → remove)', async () => {
    const res = await request(`${gw.url(port)}/x`, { headers: { 'x-multi': 'client', 'x-over': 'client', 'x-secret': 'pw' } });
    await res.body.text();
    const got = upstream.received.at(-1)!;
    assert.equal(got.headers['x-multi'], 'client, added');
    assert.equal(got.headers['x-over'], 'gateway');
    assert.equal(got.headers['x-secret'], undefined);
    assert.equal(got.headers['x-new'], undefined, 'remove runs after add');
  });

  it('response: add appends to upstream values, set overwrites, remove drops', async () => {
    const res = await request(`${gw.url(port)}/x`);
    await res.body.text();
    assert.deepEqual(res.headers['x-added'], ['from-upstream', 'r1']);
    assert.equal(res.headers['x-upstream'], 'overwritten');
    assert.equal(res.headers['x-set'], 's');
    assert.equal(res.headers['x-remove-me'], undefined);
  });

  it('setting Host rewrites the authority sent upstream', async () => {
    const res = await request(`${gw.url(port)}/host`);
    await res.body.text();
    assert.equal(upstream.received.at(-1)!.headers.host, 'virtual.internal');
  });

  it('adding Host rewrites the authority too (one Host goes upstream: the added one)', async () => {
    // BEHAVIOUR.md 2.4: setting or adding `host` is an authority rewrite. Added, the client's value stayed first and won.
    const res = await request(`${gw.url(port)}/add-host`);
    await res.body.text();
    const got = upstream.received.at(-1)!;
    assert.equal(got.headers.host, 'added.internal');
    assert.equal(got.rawHeaders.filter((_, i) => i % 2 === 0 && got.rawHeaders[i]!.toLowerCase() === 'host').length, 1);
  });

  it("a backend's request edits keep the route's authority rewrite", async () => {
    const res = await request(`${gw.url(port)}/layered`);
    await res.body.text();
    const got = upstream.received.at(-1)!;
    assert.equal(got.headers['x-backend'], '1');
    assert.equal(got.headers['x-tf'], '1');
    assert.equal(got.headers.host, 'rewritten.internal');
  });

  it('the response modifier also decorates local replies (429) and gateway errors (503)', async () => {
    await (await request(`${gw.url(port)}/limited`)).body.text();
    const limited = await request(`${gw.url(port)}/limited`);
    await limited.body.text();
    assert.equal(limited.statusCode, 429);
    assert.equal(limited.headers['x-set'], 's');
    assert.equal(limited.headers['x-added'], 'r1');
    const dead = await request(`${gw.url(port)}/dead`);
    await dead.body.text();
    assert.equal(dead.statusCode, 503);
    assert.equal(dead.headers['x-set'], 's');
  });

  it('a header value with CR/LF is a config error', async () => {
    await assert.rejects(
      gw.gateway.compile(`binds:\n- port: ${port}\n  listeners:\n  - routes:\n    - policies:\n        requestHeaderModifier: { set: { x-a: "a\\r\\nb" } }\n`),
      /:6:32: the value of header `x-a` contains characters not allowed/,
    );
  });

  it('framing is the gateway\'s: `Content-Length` in a header modifier or transformation is a config error, both sides', async () => {
    // On a response, set to anything but the body's length, it left the rest of the body on a kept-alive connection
    // as the start of the next answer; on a request, a small one made every larger upload a 413 (read as its size).
    for (const side of ['request', 'response']) {
      for (const kind of ['add', 'set']) {
        await assert.rejects(
          gw.gateway.compile(`binds:\n- port: ${port}\n  listeners:\n  - routes:\n    - policies:\n        ${side}HeaderModifier: { ${kind}: { Content-Length: "5" } }\n`),
          new RegExp(`:6:\\d+: \`Content-Length\` is the gateway's to set on a ${side} \\(the length of the body it sends\\)`),
        );
        await assert.rejects(
          gw.gateway.compile(`binds:\n- port: ${port}\n  listeners:\n  - routes:\n    - policies:\n        transformations:\n          ${side}:\n            ${kind}: { content-length: "'5'" }\n`),
          new RegExp(`\`content-length\` is the gateway's to set on a ${side}`),
        );
      }
    }
  });
});
