// extAuthz's `service` address form and connection `policies` (BEHAVIOUR.md §5.6: the same target forms as
// remoteRateLimit): gRPC over plaintext, TLS and mutual TLS with `policies.backendTLS`, call metadata from
// `policies.requestHeaderModifier`, and the HTTP variant with both. Real sockets and an openssl-made PKI.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import type { IncomingHttpHeaders } from 'node:http';
import { createServer } from 'node:https';
import type { Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { request } from 'undici';
import { makeTestPki, startEnvoyServer } from '../helpers/envoy-grpc-servers.ts';
import type { CheckRequestMessage, TestEnvoyServer, TestPki } from '../helpers/envoy-grpc-servers.ts';
import { startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';

/** Allows `x-allow: yes` (adding a header upstream), denies anything else with 401. */
function check(req: CheckRequestMessage): unknown {
  if (req.attributes.request.http.headers['x-allow'] === 'yes') {
    return { status: { code: 0 }, ok_response: { headers: [{ header: { key: 'x-authz', value: 'ok' } }] } };
  }
  return { status: { code: 7 }, denied_response: { status: { code: 401 }, body: 'denied' } };
}

describe('extAuthz: `service` address, backendTLS and requestHeaderModifier policies', () => {
  let gw: RunningGateway;
  let port: number;
  let upstream: TestUpstream;
  let pki: TestPki;
  let plain: TestEnvoyServer;
  let tls: TestEnvoyServer;
  let mtls: TestEnvoyServer;
  let httpsAuthz: Server;
  let httpsPort: number;
  const httpsSeen: IncomingHttpHeaders[] = [];

  const route = (name: string, extAuthz: Record<string, unknown>) => ({
    name,
    matches: [{ path: { pathPrefix: `/${name}/` } }],
    policies: { extAuthz },
    backends: [{ host: `127.0.0.1:${upstream.port}` }],
  });

  before(async () => {
    pki = makeTestPki();
    port = await freePort();
    upstream = await startUpstream();
    plain = await startEnvoyServer({ Check: check });
    tls = await startEnvoyServer({ Check: check }, { tls: { cert: pki.serverCert, key: pki.serverKey } });
    mtls = await startEnvoyServer({ Check: check }, { tls: { cert: pki.serverCert, key: pki.serverKey, clientCa: pki.ca } });
    httpsAuthz = createServer({ cert: readFileSync(pki.serverCert), key: readFileSync(pki.serverKey) }, (req, res) => {
      httpsSeen.push(req.headers);
      req.resume();
      res.writeHead(req.headers['x-check-key'] === 'sesame' ? 204 : 403).end();
    });
    await new Promise<void>((resolve) => httpsAuthz.listen(0, '127.0.0.1', resolve));
    httpsPort = (httpsAuthz.address() as AddressInfo).port;

    const root = { root: pki.ca };
    const routes = [
      route('grpc-svc', { service: { name: { namespace: 'default', hostname: 'localhost' }, port: plain.port } }),
      route('grpc-svc-string', { service: { name: 'default/localhost', port: plain.port }, protocol: { grpc: {} } }),
      route('grpc-tls', {
        service: { name: 'default/localhost', port: tls.port },
        policies: { backendTLS: root, requestHeaderModifier: { set: { authorization: 'Bearer gateway' }, add: { 'x-gateway': 'switchyard' } } },
      }),
      route('grpc-tls-host', { host: `localhost:${tls.port}`, policies: { backendTLS: root } }),
      route('grpc-tls-wrong-ca', { host: `localhost:${tls.port}`, policies: { backendTLS: { root: pki.otherCa } } }),
      route('grpc-mtls', { host: `localhost:${mtls.port}`, policies: { backendTLS: { ...root, cert: pki.clientCert, key: pki.clientKey } } }),
      route('grpc-mtls-no-cert', { host: `localhost:${mtls.port}`, policies: { backendTLS: root } }),
      route('http-tls', {
        service: { name: 'default/localhost', port: httpsPort },
        protocol: { http: { path: '"/check"' } },
        policies: { backendTLS: root, requestHeaderModifier: { set: { 'x-check-key': 'sesame' }, remove: ['authorization'] } },
      }),
      route('http-tls-no-key', { host: `localhost:${httpsPort}`, protocol: { http: {} }, policies: { backendTLS: root } }),
      route('http-tls-wrong-ca', { host: `localhost:${httpsPort}`, protocol: { http: {} }, policies: { backendTLS: { root: pki.otherCa }, requestHeaderModifier: { set: { 'x-check-key': 'sesame' } } } }),
    ];
    gw = await startGateway({ binds: [{ port, listeners: [{ routes }] }] });
  });
  after(async () => {
    await gw?.stop();
    await Promise.all([plain?.stop(), tls?.stop(), mtls?.stop()]);
    await new Promise<void>((resolve) => {
      httpsAuthz?.close(() => resolve());
      httpsAuthz?.closeAllConnections();
    });
    await upstream?.close();
    pki?.remove();
  });

  async function call(path: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string; reachedUpstream: boolean }> {
    const before = upstream.received.length;
    const res = await request(`${gw.url(port)}${path}`, { headers });
    const body = await res.body.text();
    return { status: res.statusCode, body, reachedUpstream: upstream.received.length > before };
  }

  function assertFailedClosed(r: { status: number; body: string; reachedUpstream: boolean }): void {
    assert.equal(r.status, 403);
    assert.deepEqual(JSON.parse(r.body), { error: { type: 'forbidden', message: 'external authorization failed' } });
    assert.equal(r.reachedUpstream, false);
  }

  describe('gRPC', () => {
    it('`service` (object and string name forms) reaches the service: allow and deny', async () => {
      const checks = plain.checks.length;
      const allowed = await call('/grpc-svc/x', { 'x-allow': 'yes' });
      assert.equal(allowed.status, 200);
      assert.equal(upstream.received.at(-1)!.headers['x-authz'], 'ok', 'the decision came from the service');
      const denied = await call('/grpc-svc/x');
      assert.equal(denied.status, 401);
      assert.equal(denied.body, 'denied');
      assert.equal((await call('/grpc-svc-string/x', { 'x-allow': 'yes' })).status, 200);
      assert.equal((await call('/grpc-svc-string/x')).status, 401);
      assert.equal(plain.checks.length, checks + 4);
    });

    it('over TLS with `policies.backendTLS`: allows, with `requestHeaderModifier` sent as metadata', async () => {
      const r = await call('/grpc-tls/x', { 'x-allow': 'yes' });
      assert.equal(r.status, 200);
      assert.equal(upstream.received.at(-1)!.headers['x-authz'], 'ok');
      const seen = tls.calls.at(-1)!;
      assert.equal(seen.metadata.authorization, 'Bearer gateway');
      assert.equal(seen.metadata['x-gateway'], 'switchyard');
      assert.equal((await call('/grpc-tls/x')).status, 401, 'a denial over TLS');
      assert.equal((await call('/grpc-tls-host/x', { 'x-allow': 'yes' })).status, 200, '`host` without a scheme plus backendTLS is TLS');
    });

    it('a certificate the CA did not sign follows the failure mode (deny: 403)', async () => {
      const calls = tls.calls.length;
      assertFailedClosed(await call('/grpc-tls-wrong-ca/x', { 'x-allow': 'yes' }));
      assert.equal(tls.calls.length, calls);
    });

    it('mutual TLS: the client certificate is presented; without it the handshake fails', async () => {
      assert.equal((await call('/grpc-mtls/x', { 'x-allow': 'yes' })).status, 200);
      assert.equal(mtls.calls.at(-1)!.clientCN, 'gateway-client');
      assertFailedClosed(await call('/grpc-mtls-no-cert/x', { 'x-allow': 'yes' }));
    });
  });

  describe('HTTP', () => {
    it('`service` over TLS with backendTLS; requestHeaderModifier changes the check request', async () => {
      const r = await call('/http-tls/x', { authorization: 'Bearer client' });
      assert.equal(r.status, 200);
      const seen = httpsSeen.at(-1)!;
      assert.equal(seen['x-check-key'], 'sesame');
      assert.equal(seen.authorization, undefined, '`remove` applies to the HTTP check');
      assert.equal((await call('/http-tls-no-key/x')).status, 403, 'the service answers without the key');
      assertFailedClosed(await call('/http-tls-wrong-ca/x'));
    });
  });

  describe('config errors point at the field', () => {
    const yaml = (policy: string) => `binds:\n- port: ${port}\n  listeners:\n  - routes:\n    - policies:\n        extAuthz: ${policy}\n      backends: [{ host: "127.0.0.1:1" }]\n`;
    const reject = (policy: string, pattern: RegExp) => assert.rejects(gw.gateway.compile(yaml(policy)), pattern);

    it('rejects a bad service, two address forms, and policies that do not apply', async () => {
      await reject(`{ service: { name: "default/localhost" } }`, /missing required key `port`.*extAuthz\.service\)/);
      await reject(`{ service: { name: "localhost", port: 9000 } }`, /`localhost` is not a service name.*extAuthz\.service\.name\)/);
      await reject(`{ service: { name: { namespace: default, hostname: " " }, port: 9000 } }`, /the service hostname is empty.*extAuthz\.service\.name\.hostname\)/);
      await reject(`{ backend: x, service: { name: "default/localhost", port: 9000 } }`, /only one of `host`, `service`, `backend` may be set/);
      await reject(`{ host: "a:1", policies: { retry: { attempts: 2, codes: [503] } } }`, /`retry` is not supported on the connection to the authorization service.*extAuthz\.policies\.retry\)/);
      await reject(`{ host: "a:1", policies: { requestHeaderModifier: { set: { grpc-timeout: 1S } } } }`, /`grpc-timeout` is reserved by gRPC.*requestHeaderModifier\.set\.grpc-timeout\)/);
      // HTTP mode sends headers, not metadata: the gRPC restriction does not apply.
      await gw.gateway.compile(yaml(`{ host: "a:1", protocol: { http: {} }, policies: { requestHeaderModifier: { set: { X-Key: v } } } }`));
    });
  });
});
