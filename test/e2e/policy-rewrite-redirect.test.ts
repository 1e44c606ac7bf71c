import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { request } from 'undici';
import { oneListenerConfig, startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';
import { header, rawRequest } from './proxy-support.ts';

describe('urlRewrite and requestRedirect', () => {
  let gw: RunningGateway;
  let port: number;
  let upstream: TestUpstream;
  before(async () => {
    port = await freePort();
    upstream = await startUpstream();
    const to = [{ host: `127.0.0.1:${upstream.port}` }];
    gw = await startGateway(oneListenerConfig(port, [
      { name: 'prefix', matches: [{ path: { pathPrefix: '/old' } }], policies: { urlRewrite: { path: { prefix: '/new' } } }, backends: to },
      { name: 'strip', matches: [{ path: { pathPrefix: '/strip/' } }], policies: { urlRewrite: { path: { prefix: '/' } } }, backends: to },
      { name: 'full', matches: [{ path: { exact: '/full' } }], policies: { urlRewrite: { path: { full: '/replaced' }, authority: { full: 'rewritten.internal:9000' } } }, backends: to },
      { name: 'bad-prefix', matches: [{ path: { exact: '/exact-only' } }], policies: { urlRewrite: { path: { prefix: '/x' } } }, backends: to },
      { name: 'redirect-https', matches: [{ path: { pathPrefix: '/secure' } }], policies: { requestRedirect: { scheme: 'https', status: 301 } }, backends: to },
      { name: 'redirect-host', matches: [{ path: { pathPrefix: '/moved' } }], policies: { requestRedirect: { authority: { host: 'other.example' } } } },
      {
        name: 'rewrite-then-redirect',
        matches: [{ path: { pathPrefix: '/legacy' } }],
        policies: { urlRewrite: { path: { prefix: '/v2' } }, requestRedirect: { status: 308 } },
        backends: to,
      },
      { name: 'redirect-query', matches: [{ path: { pathPrefix: '/with-query' } }], policies: { requestRedirect: { path: { full: '/new?from=old' } } } },
    ]));
  });
  after(async () => {
    await gw.stop();
    await upstream.close();
  });

  const get = async (path: string, headers?: Record<string, string>) => {
    const res = await request(`${gw.url(port)}${path}`, { headers });
    return { status: res.statusCode, headers: res.headers, text: await res.body.text() };
  };

  it('prefix rewrite replaces the matched prefix and keeps the query', async () => {
    const r = await get('/old/items/1?x=1&y=2');
    assert.equal(r.status, 200);
    assert.equal(upstream.received.at(-1)!.url, '/new/items/1?x=1&y=2');
  });

  it('prefix rewrite to / strips the prefix', async () => {
    await get('/strip/a/b');
    assert.equal(upstream.received.at(-1)!.url, '/a/b');
    await get('/strip');
    assert.equal(upstream.received.at(-1)!.url, '/');
  });

  it('full path and authority rewrite', async () => {
    await get('/full?q=1');
    const got = upstream.received.at(-1)!;
    assert.equal(got.url, '/replaced?q=1');
    assert.equal(got.headers.host, 'rewritten.internal:9000');
    assert.equal(got.headers['x-forwarded-host'], `127.0.0.1:${port}`, 'the client authority stays visible');
  });

  it('a prefix rewrite on a route matched without pathPrefix is a 500 that says why', async () => {
    const r = await get('/exact-only');
    assert.equal(r.status, 500);
    assert.match(JSON.parse(r.text).error.message, /needs the route to match with `pathPrefix`/);
  });

  it('redirects to https with the configured status; the backend is not contacted', async () => {
    const seen = upstream.received.length;
    const r = await get('/secure/page?a=1', { host: 'shop.example:80' });
    assert.equal(r.status, 301);
    assert.equal(r.headers.location, 'https://shop.example/secure/page?a=1');
    assert.equal(r.text, '');
    assert.equal(r.headers['content-length'], '0');
    assert.equal(r.headers['transfer-encoding'], undefined);
    assert.equal(upstream.received.length, seen);
  });

  it('redirects to another host, keeping a non-default port and defaulting to 302', async () => {
    const r = await get('/moved/x', { host: 'old.example:8080' });
    assert.equal(r.status, 302);
    assert.equal(r.headers.location, 'http://other.example:8080/moved/x');
  });

  it('rewrite runs before redirect, so the Location carries the rewritten path', async () => {
    const r = await get('/legacy/thing?z=9', { host: 'api.example' });
    assert.equal(r.status, 308);
    assert.equal(r.headers.location, 'http://api.example/v2/thing?z=9');
  });

  it('a trailing slash after the matched prefix is kept, as Gateway API and Envoy keep it (ADR 0185)', async () => {
    await get('/old/?q=1');
    assert.equal(upstream.received.at(-1)!.url, '/new/?q=1');
    await get('/old');
    assert.equal(upstream.received.at(-1)!.url, '/new');
    // A replacement of `/` never makes `//`.
    await get('/strip/');
    assert.equal(upstream.received.at(-1)!.url, '/');
    const r = await get('/legacy/', { host: 'api.example' });
    assert.equal(r.headers.location, 'http://api.example/v2/');
  });

  it('an unknown redirect status is a config error', async () => {
    await assert.rejects(
      gw.gateway.compile(`binds:\n- port: ${port}\n  listeners:\n  - routes:\n    - policies:\n        requestRedirect: { status: 305 }\n`),
      /:6:36: must be one of `301`, `302`, `303`, `307`, `308`, got number 305/,
    );
  });

  it('a query in the redirect `path.full` replaces the request query (as Envoy path_redirect), never a second `?`', async () => {
    const r = await get('/with-query/a?orig=1', { host: 'api.example' });
    assert.equal(r.status, 302);
    assert.equal(r.headers.location, 'http://api.example/new?from=old');
  });

  it('a request without a Host (HTTP/1.0) cannot be redirected to its own authority: 400, not `https:///path`', async () => {
    // Browsers read `https:///evil.example/x` as https://evil.example/x: the path's first segment became the host.
    const bare = await rawRequest(port, 'GET /secure/evil.example/x HTTP/1.0');
    assert.equal(bare.status, 400);
    assert.deepEqual(header(bare, 'location'), []);
    assert.match(bare.body.toString(), /no Host/);
    const moved = await rawRequest(port, 'GET /moved/a HTTP/1.0');
    assert.equal(moved.status, 302, 'a configured host still redirects');
    assert.deepEqual(header(moved, 'location'), ['http://other.example/moved/a']);
  });

  it('a rewritten or redirected path must be a path: config errors otherwise', async () => {
    // `full: evil.example/x` made `Location: http://host:port` + `evil.example/x` (the authority run into the path);
    // a rewrite to `nos` or `/a b` reached undici, which refused it: a 502 blamed on the upstream.
    const bad: [string, RegExp][] = [
      ['requestRedirect: { path: { full: "evil.example/x" } }', /:6:\d+: must be a path: empty or starting with `\/`, visible ASCII characters only, no `#`/],
      ['urlRewrite: { path: { full: "nos" } }', /must be a path: empty or starting with `\/`, visible ASCII characters only, no `\?` or `#`/],
      ['urlRewrite: { path: { full: "/a b" } }', /must be a path/],
      ['urlRewrite: { path: { full: "/a?x=1" } }', /must be a path: empty or starting with `\/`, visible ASCII characters only, no `\?` or `#`/],
      ['urlRewrite: { path: { prefix: "/v2#x" } }', /visible ASCII characters only, no `\?` or `#`/],
      ['requestRedirect: { path: { prefix: "/v2?x" } }', /visible ASCII characters only, no `\?` or `#`/],
    ];
    // An authority that is not `host[:port]` went out as the upstream's Host (`a b/c`) or into the Location
    // (`http://evil.example/x?:8080/...`).
    bad.push(
      ['urlRewrite: { authority: { full: "a b/c" } }', /must be `host\[:port\]` \(a DNS name or IP address, then an optional port\), got the string "a b\/c"/],
      ['requestRedirect: { authority: { host: "evil.example/x?" } }', /must be a host name \(a DNS name or IP address, no port\)/],
      ['requestRedirect: { authority: { full: "evil.example:80/x" } }', /must be `host\[:port\]`/],
    );
    for (const [policy, message] of bad) {
      await assert.rejects(gw.gateway.compile(`binds:\n- port: ${port}\n  listeners:\n  - routes:\n    - policies:\n        ${policy}\n`), message, policy);
    }
    for (const policy of [
      'urlRewrite: { path: { full: "" }, authority: { full: "[::1]:8443" } }',
      'requestRedirect: { authority: { host: "example.com." }, path: { prefix: "v2" } }',
      'requestRedirect: { authority: { full: "10.0.0.1:80" }, path: { full: "/a/b;c=1?x=%20" } }',
    ]) {
      await gw.gateway.compile(`binds:\n- port: ${port}\n  listeners:\n  - routes:\n    - policies:\n        ${policy}\n`);
    }
  });
});
