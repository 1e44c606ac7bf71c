// remoteRateLimit's other address form and its connection policies (SPEC §8.2): `service` (resolved by DNS to
// `<hostname>:<port>`), TLS and mutual TLS with `policies.backendTLS`, and call metadata from
// `policies.requestHeaderModifier`. Real sockets: grpc-js RLS servers, plaintext and TLS, with an openssl-made PKI.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { request } from 'undici';
import { stringify } from 'yaml';
import { makeTestPki, startEnvoyServer } from '../helpers/envoy-grpc-servers.ts';
import type { RateLimitRequestMessage, TestEnvoyServer, TestPki } from '../helpers/envoy-grpc-servers.ts';
import { startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';

const OK = 1;
const OVER_LIMIT = 2;

/** Limit 2 per `domain` + first descriptor entry, counted by the server. */
function rlsHandler() {
  const counters = new Map<string, number>();
  return (req: RateLimitRequestMessage) => {
    const first = req.descriptors[0]!.entries[0]!;
    const k = `${req.domain}|${first.key}=${first.value}`;
    const n = (counters.get(k) ?? 0) + 1;
    counters.set(k, n);
    const code = n > 2 ? OVER_LIMIT : OK;
    return { overall_code: code, statuses: [{ code, current_limit: { requests_per_unit: 2, unit: 2 }, limit_remaining: Math.max(0, 2 - n) }] };
  };
}

describe('remoteRateLimit: `service` address, backendTLS and requestHeaderModifier policies', () => {
  let gw: RunningGateway;
  let port: number;
  let upstream: TestUpstream;
  let pki: TestPki;
  let plain: TestEnvoyServer;
  let tls: TestEnvoyServer;
  let mtls: TestEnvoyServer;
  let config: Record<string, unknown>;

  const descriptors = [{ entries: [{ key: 'user', value: 'request.headers["x-user"]' }] }];
  const route = (name: string, policy: Record<string, unknown>) => ({
    name,
    matches: [{ path: { pathPrefix: `/${name}/` } }],
    policies: { remoteRateLimit: { domain: name, descriptors, ...policy } },
    backends: [{ host: `127.0.0.1:${upstream.port}` }],
  });

  before(async () => {
    pki = makeTestPki();
    port = await freePort();
    upstream = await startUpstream();
    plain = await startEnvoyServer({ ShouldRateLimit: rlsHandler() });
    tls = await startEnvoyServer({ ShouldRateLimit: rlsHandler() }, { tls: { cert: pki.serverCert, key: pki.serverKey } });
    mtls = await startEnvoyServer({ ShouldRateLimit: rlsHandler() }, { tls: { cert: pki.serverCert, key: pki.serverKey, clientCa: pki.ca } });
    const root = { root: pki.ca };
    const routes = [
      route('svc-object', { service: { name: { namespace: 'default', hostname: 'localhost' }, port: plain.port } }),
      route('svc-string', { service: { name: 'default/localhost', port: plain.port } }),
      route('svc-headers', {
        service: { name: 'default/localhost', port: plain.port },
        policies: { requestHeaderModifier: { add: { 'x-tenant': 'acme', 'X-Multi': 'one' }, set: { 'x-api-key': 'k-123' }, remove: ['x-gone'] } },
      }),
      route('host-headers', { host: plain.address, policies: { requestHeaderModifier: { add: { 'x-multi': 'a' }, set: { 'x-multi': 'b' } } } }),
      route('tls-host', { host: `localhost:${tls.port}`, policies: { backendTLS: root } }),
      route('tls-https', { host: `https://localhost:${tls.port}`, policies: { backendTLS: root } }),
      route('tls-svc', { service: { name: { namespace: 'default', hostname: 'localhost' }, port: tls.port }, policies: { backendTLS: root, requestHeaderModifier: { set: { authorization: 'Bearer rls' } } } }),
      route('tls-wrong-ca', { host: `localhost:${tls.port}`, policies: { backendTLS: { root: pki.otherCa } } }),
      route('tls-system-roots', { host: `https://localhost:${tls.port}` }),
      route('tls-to-plaintext', { host: plain.address, policies: { backendTLS: root } }),
      route('tls-hostname', { host: `127.0.0.1:${tls.port}`, policies: { backendTLS: { ...root, hostname: 'rls.test' } } }),
      route('tls-wrong-name', { host: `127.0.0.1:${tls.port}`, policies: { backendTLS: { ...root, hostname: 'other.test' } } }),
      route('tls-insecure-host', { host: `127.0.0.1:${tls.port}`, policies: { backendTLS: { ...root, hostname: 'other.test', insecureHost: true } } }),
      route('tls-insecure', { host: `localhost:${tls.port}`, policies: { backendTLS: { insecure: true } } }),
      route('tls-san-ok', { host: `localhost:${tls.port}`, policies: { backendTLS: { ...root, subjectAltNames: ['DNS:rls.test'] } } }),
      route('tls-san-bad', { host: `localhost:${tls.port}`, policies: { backendTLS: { ...root, subjectAltNames: ['DNS:nope.test'] } } }),
      route('mtls', { host: `localhost:${mtls.port}`, policies: { backendTLS: { ...root, cert: pki.clientCert, key: pki.clientKey } } }),
      route('mtls-no-cert', { host: `localhost:${mtls.port}`, policies: { backendTLS: root } }),
    ];
    config = { binds: [{ port, listeners: [{ routes }] }] };
    gw = await startGateway(config);
  });
  after(async () => {
    await gw?.stop();
    await Promise.all([plain?.stop(), tls?.stop(), mtls?.stop()]);
    await upstream?.close();
    pki?.remove();
  });

  async function call(path: string, user = 'u1'): Promise<{ status: number; body: string; reachedUpstream: boolean }> {
    const before = upstream.received.length;
    const res = await request(`${gw.url(port)}${path}`, { headers: { 'x-user': user } });
    const body = await res.body.text();
    return { status: res.statusCode, body, reachedUpstream: upstream.received.length > before };
  }

  /** Two calls pass and the third is over the limit: proves the RLS answered each. */
  async function assertLimited(name: string, server: TestEnvoyServer): Promise<void> {
    const calls = server.rateLimits.length;
    assert.equal((await call(`/${name}/x`)).status, 200, `${name}: first call under the limit`);
    assert.equal((await call(`/${name}/x`)).status, 200, `${name}: second call under the limit`);
    const over = await call(`/${name}/x`);
    assert.equal(over.status, 429, `${name}: third call over the limit`);
    assert.equal(over.reachedUpstream, false);
    assert.equal(server.rateLimits.length, calls + 3, `${name}: every call reached this server`);
    assert.equal(server.rateLimits.at(-1)!.domain, name);
  }

  function assertFailedClosed(r: { status: number; body: string; reachedUpstream: boolean }, why: string): void {
    assert.equal(r.status, 500, why);
    assert.deepEqual(JSON.parse(r.body), { error: { type: 'rate_limit_error', message: 'rate limit failed' } });
    assert.equal(r.reachedUpstream, false);
  }

  describe('`service` (resolved by DNS: <hostname>:<port>)', () => {
    it('object form {namespace, hostname}: 200 under the limit, 429 over', async () => {
      await assertLimited('svc-object', plain);
    });

    it('string form `<namespace>/<hostname>`: 200 under the limit, 429 over', async () => {
      await assertLimited('svc-string', plain);
    });
  });

  describe('policies.requestHeaderModifier', () => {
    it('`add` and `set` are sent as gRPC metadata on every call; `remove` is accepted', async () => {
      assert.equal((await call('/svc-headers/x')).status, 200);
      assert.equal((await call('/svc-headers/x', 'u2')).status, 200);
      for (const seen of plain.calls.slice(-2)) {
        assert.equal(seen.metadata['x-api-key'], 'k-123');
        assert.equal(seen.metadata['x-tenant'], 'acme');
        assert.equal(seen.metadata['x-multi'], 'one', 'names are lower-cased');
      }
    });

    it('`set` replaces what `add` put under the same name', async () => {
      assert.equal((await call('/host-headers/x')).status, 200);
      assert.equal(plain.calls.at(-1)!.metadata['x-multi'], 'b');
    });
  });

  describe('policies.backendTLS', () => {
    it('verifies the service with the `root` CA: host without scheme, https:// host and service forms', async () => {
      // The server speaks only TLS: a call that reaches it went over TLS.
      await assertLimited('tls-host', tls);
      await assertLimited('tls-https', tls);
      await assertLimited('tls-svc', tls);
      assert.equal(tls.calls.at(-1)!.metadata.authorization, 'Bearer rls', 'metadata over TLS too');
    });

    it('a certificate the CA did not sign fails closed (500 `rate limit failed`)', async () => {
      const calls = tls.calls.length;
      assertFailedClosed(await call('/tls-wrong-ca/x'), 'wrong CA');
      assertFailedClosed(await call('/tls-system-roots/x'), 'https:// without backendTLS: system roots do not know the test CA');
      assert.equal(tls.calls.length, calls, 'no call got through the handshake');
      assertFailedClosed(await call('/tls-to-plaintext/x'), 'TLS to a plaintext server');
    });

    it('`hostname` is the SNI and verification name; `insecureHost` skips only the name check', async () => {
      assert.equal((await call('/tls-hostname/x')).status, 200);
      assertFailedClosed(await call('/tls-wrong-name/x'), 'certificate is not for other.test');
      assert.equal((await call('/tls-insecure-host/x')).status, 200);
    });

    it('`insecure` skips verification; `subjectAltNames` replaces the name check', async () => {
      assert.equal((await call('/tls-insecure/x')).status, 200);
      assert.equal((await call('/tls-san-ok/x')).status, 200);
      assertFailedClosed(await call('/tls-san-bad/x'), 'no SAN matches');
    });

    it('`cert` and `key` present a client certificate (mutual TLS)', async () => {
      await assertLimited('mtls', mtls);
      assert.equal(mtls.calls.at(-1)!.clientCN, 'gateway-client');
      const calls = mtls.calls.length;
      assertFailedClosed(await call('/mtls-no-cert/x'), 'the server requires a client certificate');
      assert.equal(mtls.calls.length, calls);
    });
  });

  it('a reload that changes the call metadata or TLS settings takes effect (new client)', async () => {
    const routes = (config.binds as { listeners: { routes: { name: string; policies: { remoteRateLimit: Record<string, unknown> } }[] }[] }[])[0]!.listeners[0]!.routes;
    const headers = routes.find((r) => r.name === 'host-headers')!;
    headers.policies.remoteRateLimit.policies = { requestHeaderModifier: { set: { 'x-multi': 'after-reload' } } };
    const wrongCa = routes.find((r) => r.name === 'tls-wrong-ca')!;
    wrongCa.policies.remoteRateLimit.policies = { backendTLS: { root: pki.ca } };
    // The same static block as the helper wrote at start.
    writeFileSync(gw.file, stringify({ ...config, config: { adminAddr: '127.0.0.1:0', statsAddr: '127.0.0.1:0', readinessAddr: '127.0.0.1:0' } }));
    assert.equal(await gw.gateway.reload(), true);
    assert.equal((await call('/host-headers/x', 'u9')).status, 200);
    assert.equal(plain.calls.at(-1)!.metadata['x-multi'], 'after-reload');
    assert.equal((await call('/tls-wrong-ca/x')).status, 200, 'the corrected CA is used');
  });

  describe('config errors point at the field', () => {
    const yaml = (policy: string) =>
      `binds:\n- port: ${port}\n  listeners:\n  - routes:\n    - policies:\n        remoteRateLimit: ${policy}\n      backends: [{ host: "127.0.0.1:1" }]\n`;
    const reject = (policy: string, pattern: RegExp) => assert.rejects(gw.gateway.compile(yaml(policy)), pattern);

    it('service: missing or out-of-range port, bad name string, empty hostname', async () => {
      await reject(`{ domain: d, service: { name: { namespace: default, hostname: localhost } } }`, /:6:48: missing required key `port`.*remoteRateLimit\.service/);
      await reject(`{ domain: d, service: { name: "default/localhost" } }`, /missing required key `port`.*remoteRateLimit\.service/);
      await reject(`{ domain: d, service: { name: "default/localhost", port: 70000 } }`, /remoteRateLimit\.service\.port/);
      await reject(`{ domain: d, service: { name: "default/localhost", port: 0 } }`, /remoteRateLimit\.service\.port/);
      await reject(`{ domain: d, service: { name: "localhost", port: 8081 } }`, /:6:56: `localhost` is not a service name: write `<namespace>\/<hostname>` \(exactly one `\/`\).*remoteRateLimit\.service\.name\)/);
      await reject(`{ domain: d, service: { name: "a/b/c", port: 8081 } }`, /`a\/b\/c` is not a service name.*remoteRateLimit\.service\.name\)/);
      await reject(`{ domain: d, service: { name: "default/", port: 8081 } }`, /the service hostname is empty.*remoteRateLimit\.service\.name\)/);
      await reject(`{ domain: d, service: { name: { namespace: default, hostname: "" }, port: 8081 } }`, /the service hostname is empty.*remoteRateLimit\.service\.name\.hostname\)/);
      await reject(`{ domain: d, service: { name: { namespace: default, hostname: "bad host" }, port: 8081 } }`, /`bad host` is not a host name.*service\.name\.hostname\)/);
      await reject(`{ domain: d, service: { name: { hostname: x }, port: 8081 } }`, /missing required key `namespace`/);
    });

    it('exactly one of host, service, backend', async () => {
      await reject(`{ domain: d, host: "127.0.0.1:1", service: { name: "default/localhost", port: 8081 } }`, /only one of `host`, `service`, `backend` may be set/);
      await reject(`{ domain: d }`, /exactly one of `host`, `service`, `backend` is required/);
    });

    it('policies: unsupported or invalid entries', async () => {
      await reject(`{ domain: d, host: "127.0.0.1:1", policies: { timeout: { requestTimeout: 1s } } }`, /`timeout` is not supported on the connection to the rate limit service; only `backendTLS` and `requestHeaderModifier` apply here.*remoteRateLimit\.policies\.timeout/);
      await reject(`{ domain: d, host: "127.0.0.1:1", policies: { backendTLSS: {} } }`, /backendTLSS/);
      await reject(`{ domain: d, host: "127.0.0.1:1", policies: { requestHeaderModifier: { set: { content-type: x } } } }`, /`content-type` is reserved by gRPC.*policies\.requestHeaderModifier\.set\.content-type/);
      await reject(`{ domain: d, host: "127.0.0.1:1", policies: { requestHeaderModifier: { add: { x-key-bin: x } } } }`, /binary \(`-bin`\) metadata key/);
      await reject(`{ domain: d, host: "127.0.0.1:1", policies: { backendTLS: { root: /nonexistent/ca.pem } } }`, /cannot read the CA bundle file.*policies\.backendTLS\.root/);
      await reject(`{ domain: d, host: "http://127.0.0.1:1", policies: { backendTLS: {} } }`, /`http:\/\/` asks for plaintext.*remoteRateLimit\.host/);
    });
  });
});
