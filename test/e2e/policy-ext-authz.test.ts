import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { IncomingHttpHeaders, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { request } from 'undici';
import type { Plugin } from 'switchyard/sdk';
import authorization from '../../plugins/policies/authorization/plugin.ts';
import extAuthz from '../../plugins/policies/ext-authz/plugin.ts';
import { fullPreset } from '../../plugins/presets/full.ts';
import { grpc, startEnvoyServer } from '../helpers/envoy-grpc-servers.ts';
import type { TestEnvoyServer } from '../helpers/envoy-grpc-servers.ts';
import { namedRoutes, startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';

function preset(...extra: Plugin[]): Plugin[] {
  const base = fullPreset as readonly Plugin[];
  return [...base, ...extra.filter((p) => !base.some((b) => b.key === p.key))];
}

interface Result {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
  reachedUpstream: boolean;
  ms: number;
}

describe('extAuthz', () => {
  let gw: RunningGateway;
  let port: number;
  let upstream: TestUpstream;
  let authz: TestEnvoyServer;
  let httpAuthz: Server;
  let httpAuthzPort: number;
  let deadPort: number;
  const httpSeen: { method: string; url: string; headers: IncomingHttpHeaders }[] = [];

  const route = (name: string, policies: Record<string, unknown>) => namedRoutes([{ name, policies }], () => ({ host: `127.0.0.1:${upstream.port}` }))[0]!;

  before(async () => {
    port = await freePort();
    deadPort = await freePort(); // nothing listens there
    upstream = await startUpstream();
    authz = await startEnvoyServer({
      async Check(req) {
        const h = req.attributes.request.http.headers;
        if (h['x-mode'] === 'error') throw { code: grpc.status.UNAVAILABLE, details: 'backend store down' };
        if (h['x-mode'] === 'slow') await sleep(1500);
        if (h['x-mode'] === 'bare-deny') return { status: { code: 7 } };
        if (h['x-mode'] === 'unsendable') {
          // Values no header can carry (CR LF), and names that are not tokens: dropped, the rest applied.
          const bad = [
            { header: { key: 'x-split', value: 'a\r\nx-injected: 1' } },
            { header: { key: 'bad name', value: 'v' } },
            { header: { key: 'x-fine', value: 'fine' } },
          ];
          if (h['x-deny'] === 'yes') return { status: { code: 7 }, denied_response: { status: { code: 403 }, body: 'no', headers: bad } };
          return { status: { code: 0 }, ok_response: { headers: bad, response_headers_to_add: bad } };
        }
        if (h['x-allow'] === 'yes') {
          return {
            status: { code: 0 },
            ok_response: {
              headers: [
                { header: { key: 'x-authz', value: 'ok' } },
                { header: { key: 'x-user', value: 'from-authz' }, append: { value: false } },
                { header: { key: 'x-tags', value: 'b' }, append: { value: true } },
              ],
              headers_to_remove: ['x-remove-me'],
              response_headers_to_add: [{ header: { key: 'x-authz-decision', value: 'allowed' } }],
              query_parameters_to_set: [{ key: 'added', value: '1' }],
              query_parameters_to_remove: ['drop'],
            },
          };
        }
        return {
          status: { code: 7, message: 'no' },
          denied_response: {
            status: { code: 401 },
            body: 'denied by ext_authz',
            headers: [
              { header: { key: 'content-type', value: 'text/plain' } },
              { header: { key: 'www-authenticate', value: 'Bearer realm="authz"' } },
            ],
          },
        };
      },
    });
    httpAuthz = createServer((req, res) => {
      httpSeen.push({ method: req.method!, url: req.url!, headers: req.headers });
      req.resume();
      const respond = () => {
        if (req.url!.includes('/slow')) return; // answered below, too late
        // Denials whose body cannot be read whole: larger than the 1 MiB the gateway reads, or stalled after a part.
        if (req.url!.includes('/huge-deny')) {
          res.writeHead(401, { 'content-type': 'text/plain', 'www-authenticate': 'Bearer realm="authz"' });
          return res.end(Buffer.alloc(2 * 1024 * 1024, 0x61));
        }
        if (req.url!.includes('/stalled-deny')) {
          res.writeHead(401, { 'content-type': 'text/plain', 'www-authenticate': 'Bearer realm="authz"' });
          return res.write('denied, and then nothing more');
        }
        if (req.headers.authorization === 'Bearer anonymous') {
          res.writeHead(204);
          return res.end();
        }
        if (req.headers.authorization === 'Bearer good') {
          res.writeHead(204, { 'x-user-id': 'u-123', 'x-not-copied': 'nope' });
          return res.end();
        }
        res.writeHead(403, { 'content-type': 'application/problem+json', 'x-reason': 'bad-token' });
        res.end(JSON.stringify({ title: 'forbidden by http authz', path: req.url }));
      };
      if (req.url!.includes('/slow')) setTimeout(() => res.writeHead(200).end(), 1500).unref();
      respond();
    });
    await new Promise<void>((resolve) => httpAuthz.listen(0, '127.0.0.1', resolve));
    httpAuthzPort = (httpAuthz.address() as AddressInfo).port;

    const grpcHost = authz.address;
    const httpHost = `127.0.0.1:${httpAuthzPort}`;
    const routes = [
      route('grpc', { extAuthz: { host: grpcHost, protocol: { grpc: { context: { route: 'grpc' } } } } }),
      route('grpc-default', { extAuthz: { host: grpcHost } }),
      route('grpc-named', { extAuthz: { backend: 'authz-svc' } }),
      route('grpc-fast', { extAuthz: { host: grpcHost, timeout: '200ms' } }),
      route('grpc-then-rules', { extAuthz: { host: grpcHost }, authorization: { rules: ['request.headers["x-authz"] == "ok"'] } }),
      route('dead', { extAuthz: { host: `127.0.0.1:${deadPort}` } }),
      route('dead-allow', { extAuthz: { host: `127.0.0.1:${deadPort}`, failureMode: 'allow' } }),
      route('dead-status', { extAuthz: { host: `127.0.0.1:${deadPort}`, failureMode: { denyWithStatus: 503 } } }),
      route('http', {
        extAuthz: {
          host: httpHost,
          protocol: { http: { path: '"/check" + request.path', includeResponseHeaders: ['x-user-id'] } },
          includeRequestHeaders: ['x-forwarded-user', 'X-Tenant'],
        },
      }),
      route('http-plain', { extAuthz: { host: httpHost, protocol: { http: {} } } }),
      route('http-slow', { extAuthz: { host: httpHost, timeout: '200ms', protocol: { http: { path: '"/slow"' } } } }),
      route('http-deny-allow', { extAuthz: { host: httpHost, timeout: '300ms', failureMode: 'allow', protocol: { http: {} } } }),
      route('http-dead', { extAuthz: { host: `127.0.0.1:${deadPort}`, protocol: { http: {} } } }),
      route('http-badpath', { extAuthz: { host: httpHost, protocol: { http: { path: 'request.headers["x-missing"]' } } } }),
    ];
    gw = await startGateway(
      { backends: [{ name: 'authz-svc', host: grpcHost }], binds: [{ port, listeners: [{ routes }] }] },
      { preset: preset(extAuthz, authorization) },
    );
  });
  after(async () => {
    await gw?.stop();
    await authz?.stop();
    await new Promise<void>((resolve) => {
      httpAuthz?.close(() => resolve());
      httpAuthz?.closeAllConnections();
    });
    await upstream?.close();
  });

  async function call(path: string, headers: Record<string, string> = {}, method = 'GET'): Promise<Result> {
    const before = upstream.received.length;
    const start = performance.now();
    const res = await request(`${gw.url(port)}${path}`, { method, headers });
    const text = await res.body.text();
    return { status: res.statusCode, headers: res.headers as IncomingHttpHeaders, text, reachedUpstream: upstream.received.length > before, ms: performance.now() - start };
  }

  function assertFailedClosed(r: Result, status = 403) {
    assert.equal(r.status, status);
    assert.deepEqual(JSON.parse(r.text), { error: { type: 'forbidden', message: 'external authorization failed' } });
    assert.equal(r.reachedUpstream, false);
  }

  describe('gRPC (envoy.service.auth.v3.Authorization/Check)', () => {
    it('allows, applying the service header changes to the upstream request and the response', async () => {
      const r = await call('/grpc/items?keep=1&drop=2', { 'x-allow': 'yes', 'x-user': 'spoofed', 'x-tags': 'a', 'x-remove-me': '1', 'x-custom': 'c1' });
      assert.equal(r.status, 200);
      assert.equal(r.reachedUpstream, true);
      const got = upstream.received.at(-1)!;
      assert.equal(got.headers['x-authz'], 'ok', 'ok_response.headers are added upstream');
      assert.equal(got.headers['x-user'], 'from-authz', 'append=false overwrites');
      assert.equal(got.headers['x-tags'], 'a, b', 'append=true appends');
      assert.equal(got.headers['x-remove-me'], undefined, 'headers_to_remove');
      assert.equal(got.url, '/grpc/items?keep=1&added=1', 'query_parameters_to_set / _remove');
      assert.equal(r.headers['x-authz-decision'], 'allowed', 'response_headers_to_add reach the client');
    });

    it('a header the service sets that no HTTP header can carry is dropped, not a 500 or a 502', async () => {
      const r = await call('/grpc/unsendable', { 'x-allow': 'yes', 'x-mode': 'unsendable' });
      assert.equal(r.status, 200, r.text);
      const got = upstream.received.at(-1)!;
      assert.equal(got.headers['x-fine'], 'fine');
      assert.equal(got.headers['x-split'], undefined);
      assert.equal(got.headers['x-injected'], undefined);
      assert.equal(r.headers['x-fine'], 'fine', 'response_headers_to_add');
      assert.equal(r.headers['x-split'], undefined);
      const denied = await call('/grpc/unsendable', { 'x-mode': 'unsendable', 'x-deny': 'yes' });
      assert.equal(denied.status, 403, denied.text);
      assert.equal(denied.headers['x-fine'], 'fine');
      assert.equal(denied.headers['x-split'], undefined);
    });

    it('sends the request attributes: addresses, method, path, host, scheme and every header', async () => {
      await call('/grpc/attrs?q=1', { 'x-allow': 'yes', 'x-custom': 'c1', authorization: 'Bearer abc' }, 'POST');
      const attrs = authz.checks.at(-1)!.attributes;
      assert.equal(attrs.source.address.socket_address.address, '127.0.0.1');
      assert.ok(attrs.source.address.socket_address.port_value > 0);
      assert.equal(attrs.destination.address.socket_address.port_value, port);
      const http = attrs.request.http;
      assert.equal(http.method, 'POST');
      assert.equal(http.path, '/grpc/attrs?q=1');
      assert.equal(http.host, `127.0.0.1:${port}`);
      assert.equal(http.scheme, 'http');
      assert.equal(http.protocol, 'HTTP/1.1');
      assert.equal(http.headers['x-custom'], 'c1');
      assert.equal(http.headers.authorization, 'Bearer abc', 'gRPC mode sends all headers');
      assert.equal(http.headers[':method'], 'POST');
      assert.equal(http.headers[':path'], '/grpc/attrs?q=1');
      assert.deepEqual(attrs.context_extensions, { route: 'grpc' });
    });

    it('denies with the service status, headers and body', async () => {
      const r = await call('/grpc/items');
      assert.equal(r.status, 401);
      assert.equal(r.text, 'denied by ext_authz');
      assert.equal(r.headers['content-type'], 'text/plain');
      assert.equal(r.headers['www-authenticate'], 'Bearer realm="authz"');
      assert.equal(r.reachedUpstream, false);
    });

    it('a denial without denied_response is 403', async () => {
      const r = await call('/grpc-default/x', { 'x-mode': 'bare-deny' });
      assert.equal(r.status, 403);
      assert.equal(JSON.parse(r.text).error.type, 'forbidden');
      assert.equal(r.reachedUpstream, false);
    });

    it('reaches the service through a named backend; protocol defaults to gRPC', async () => {
      assert.equal((await call('/grpc-named/x', { 'x-allow': 'yes' })).status, 200);
      assert.equal((await call('/grpc-named/x')).status, 401);
      assert.equal((await call('/grpc-default/x', { 'x-allow': 'yes' })).status, 200);
    });

    it('runs before authorization rules, which see the headers it added', async () => {
      assert.equal((await call('/grpc-then-rules/x', { 'x-allow': 'yes' })).status, 200);
    });

    it('a gRPC error from the service follows the failure mode (deny: 403)', async () => {
      assertFailedClosed(await call('/grpc/x', { 'x-mode': 'error' }));
    });

    it('a service slower than `timeout` follows the failure mode', async () => {
      const r = await call('/grpc-fast/x', { 'x-mode': 'slow', 'x-allow': 'yes' });
      assertFailedClosed(r);
      assert.ok(r.ms < 1200, `gave up after the 200ms timeout (took ${Math.round(r.ms)}ms)`);
    });

    it('an unreachable service denies with 403 by default', async () => {
      assertFailedClosed(await call('/dead/x', { 'x-allow': 'yes' }));
    });

    it('failureMode allow lets requests through when the service is unreachable', async () => {
      const r = await call('/dead-allow/x');
      assert.equal(r.status, 200);
      assert.equal(r.reachedUpstream, true);
    });

    it('failureMode denyWithStatus picks the status', async () => {
      assertFailedClosed(await call('/dead-status/x'), 503);
    });
  });

  describe('HTTP', () => {
    it('calls the CEL path with the client method and only Authorization plus includeRequestHeaders; 2xx allows', async () => {
      const r = await call('/http/orders?id=7', { authorization: 'Bearer good', 'x-forwarded-user': 'alice', 'x-tenant': 'acme', 'x-other': 'secret' }, 'POST');
      assert.equal(r.status, 200);
      const seen = httpSeen.at(-1)!;
      assert.equal(seen.method, 'POST');
      assert.equal(seen.url, '/check/http/orders');
      assert.equal(seen.headers.authorization, 'Bearer good');
      assert.equal(seen.headers['x-forwarded-user'], 'alice');
      assert.equal(seen.headers['x-tenant'], 'acme', 'includeRequestHeaders is case-insensitive');
      assert.equal(seen.headers['x-other'], undefined, 'other headers are not sent');
      const got = upstream.received.at(-1)!;
      assert.equal(got.headers['x-user-id'], 'u-123', 'includeResponseHeaders are copied upstream');
      assert.equal(got.headers['x-not-copied'], undefined);
      assert.equal(got.headers.authorization, 'Bearer good', 'extAuthz does not consume the credential');
    });

    it('a header named in includeResponseHeaders is the service\'s: the client\'s own copy never reaches the upstream', async () => {
      // The service allows without naming a user (an anonymous caller): the client's `x-user-id: admin` must not pass
      // as if the service had set it.
      assert.equal((await call('/http/orders', { authorization: 'Bearer anonymous', 'x-user-id': 'admin', 'X-User-Id': 'admin' })).status, 200);
      assert.equal(upstream.received.at(-1)!.headers['x-user-id'], undefined);
      assert.equal((await call('/http/orders', { authorization: 'Bearer good', 'x-user-id': 'admin' })).status, 200);
      assert.equal(upstream.received.at(-1)!.headers['x-user-id'], 'u-123');
    });

    it('any other answer goes back to the client verbatim', async () => {
      const r = await call('/http/orders', { authorization: 'Bearer bad' });
      assert.equal(r.status, 403);
      assert.equal(r.headers['content-type'], 'application/problem+json');
      assert.equal(r.headers['x-reason'], 'bad-token');
      assert.deepEqual(JSON.parse(r.text), { title: 'forbidden by http authz', path: '/check/http/orders' });
      assert.equal(r.reachedUpstream, false);
    });

    it('without a path expression the original path and query are used', async () => {
      assert.equal((await call('/http-plain/a/b?x=1&y=2', { authorization: 'Bearer good' })).status, 200);
      assert.equal(httpSeen.at(-1)!.url, '/http-plain/a/b?x=1&y=2');
    });

    it('a service slower than `timeout` follows the failure mode', async () => {
      const r = await call('/http-slow/x', { authorization: 'Bearer good' });
      assertFailedClosed(r);
      assert.ok(r.ms < 1200, `gave up after the 200ms timeout (took ${Math.round(r.ms)}ms)`);
    });

    it('an unreachable service denies with 403', async () => {
      assertFailedClosed(await call('/http-dead/x', { authorization: 'Bearer good' }));
    });

    it('a denial whose body is too large or stalls still denies with its status, whatever the failure mode', async () => {
      for (const path of ['/http-deny-allow/huge-deny', '/http-deny-allow/stalled-deny']) {
        const r = await call(path, { authorization: 'Bearer good' });
        assert.equal(r.status, 401, `${path}: the service's decision stands (${r.text.slice(0, 100)})`);
        assert.equal(r.reachedUpstream, false, `${path}: never reaches the upstream`);
        assert.equal(r.headers['www-authenticate'], 'Bearer realm="authz"');
        assert.deepEqual(JSON.parse(r.text), { error: { type: 'authentication_failed', message: 'denied by external authorization' } });
      }
    });

    it('a path expression that fails follows the failure mode', async () => {
      assertFailedClosed(await call('/http-badpath/x', { authorization: 'Bearer good' }));
    });
  });

  describe('config', () => {
    const yaml = (policy: string) => `binds:\n- port: ${port}\n  listeners:\n  - routes:\n    - policies:\n        extAuthz: ${policy}\n      backends: [{ host: "127.0.0.1:1" }]\n`;
    it('rejects bad values at their position', async () => {
      await assert.rejects(gw.gateway.compile(yaml(`{ host: "127.0.0.1:1", protocol: { http: { path: "request.((" } } }`)), /:6:77: invalid CEL expression `request\.\(\(`/);
      await assert.rejects(gw.gateway.compile(yaml(`{ protocol: { grpc: {} } }`)), /exactly one of `host`, `service`, `backend` is required/);
      await assert.rejects(gw.gateway.compile(yaml(`{ host: "nohostport" }`)), /`nohostport` is not a `host:port` address/);
      await assert.rejects(gw.gateway.compile(yaml(`{ backend: "nope" }`)), /unknown backend `nope`/);
      await assert.rejects(gw.gateway.compile(yaml(`{ host: "a:1", protocol: { grpc: {}, http: {} } }`)), /only one of `grpc`, `http` may be set/);
      await assert.rejects(gw.gateway.compile(yaml(`{ host: "a:1", failureMode: "sometimes" }`)), /failureMode/);
    });
  });
});
