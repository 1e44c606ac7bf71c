// Issue 14 item 7: the admin, stats and readiness servers refuse requests whose Host or Origin names another site
// (DNS rebinding: a page on attacker.example whose name resolves to 127.0.0.1 must not read /config_dump).
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';

/** GET with exactly these headers (node:http sends our Host instead of its own). */
function get(url: string, headers: Record<string, string>): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { headers, setHost: !('host' in headers) }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode!, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('admin servers: Host and Origin checks', () => {
  let gw: RunningGateway;
  let adminPort: number;
  let statsPort: number;
  before(async () => {
    gw = await startGateway({
      // The stats server listens on every interface, as in a pod; admin stays on loopback.
      config: { adminAddr: '127.0.0.1:0', statsAddr: '0.0.0.0:0', readinessAddr: '127.0.0.1:0' },
      binds: [],
    });
    adminPort = gw.gateway.admin.address('admin')!.port;
    statsPort = gw.gateway.admin.address('stats')!.port;
  });
  after(() => gw.stop());

  it('Host: attacker.example gets 403 from /config_dump, and the body says nothing of the config', async () => {
    const res = await get(`${gw.adminUrl}/config_dump`, { host: `attacker.example:${adminPort}` });
    assert.equal(res.status, 403);
    assert.doesNotMatch(res.body, /binds|generation/);
    assert.equal((await get(`${gw.adminUrl}/config_dump`, { host: 'attacker.example' })).status, 403);
  });

  it('a foreign Origin gets 403, even with a loopback Host', async () => {
    const host = `127.0.0.1:${adminPort}`;
    assert.equal((await get(`${gw.adminUrl}/config_dump`, { host, origin: 'http://attacker.example' })).status, 403);
    assert.equal((await get(`${gw.adminUrl}/config_dump`, { host, origin: `http://attacker.example:${adminPort}` })).status, 403);
    assert.equal((await get(`${gw.adminUrl}/config_dump`, { host, origin: 'null' })).status, 403);
    // Another local port is another origin (a dev server on localhost:3000 is not the admin UI).
    assert.equal((await get(`${gw.adminUrl}/config_dump`, { host, origin: 'http://localhost:3000' })).status, 403);
  });

  it('loopback names are accepted: localhost, 127.0.0.1, [::1], with or without the port', async () => {
    for (const host of [`127.0.0.1:${adminPort}`, `localhost:${adminPort}`, `[::1]:${adminPort}`, 'localhost', '127.0.0.1', `LOCALHOST:${adminPort}`]) {
      const res = await get(`${gw.adminUrl}/config_dump`, { host });
      assert.equal(res.status, 200, host);
      assert.match(res.body, /"generation"/);
    }
    const origin = await get(`${gw.adminUrl}/config_dump`, { host: `localhost:${adminPort}`, origin: `http://localhost:${adminPort}` });
    assert.equal(origin.status, 200, 'the admin page itself is same-origin');
  });

  it('a loopback name with another port (kubectl port-forward 9000:15000) is served; an Origin of another port is not', async () => {
    assert.equal((await get(`${gw.adminUrl}/config_dump`, { host: 'localhost:9000' })).status, 200);
    assert.equal((await get(`${gw.adminUrl}/config_dump`, { host: 'localhost:9000', origin: 'http://localhost:9000' })).status, 200);
    assert.equal((await get(`${gw.adminUrl}/config_dump`, { host: 'localhost:9000', origin: 'http://localhost:3000' })).status, 403);
  });

  it('the stats and readiness servers check too', async () => {
    assert.equal((await get(`${gw.statsUrl}/metrics`, { host: `attacker.example:${statsPort}` })).status, 403);
    assert.equal((await get(`${gw.readinessUrl}/healthz/ready`, { host: 'attacker.example' })).status, 403);
    assert.equal((await get(`${gw.readinessUrl}/healthz/ready`, { host: 'localhost' })).status, 200);
  });

  it('a server on 0.0.0.0 answers a probe addressed to the pod IP, but not a DNS name', async () => {
    // Kubernetes probes and Prometheus scrapes send `Host: <pod IP>:<port>`.
    const res = await get(`${gw.statsUrl}/metrics`, { host: `10.12.3.4:${statsPort}` });
    assert.equal(res.status, 200);
    assert.match(res.body, /switchyard_config_generation/);
    assert.equal((await get(`${gw.statsUrl}/metrics`, { host: `[fd00::12]:${statsPort}` })).status, 200);
    assert.equal((await get(`${gw.statsUrl}/metrics`, { host: `metrics.internal.example:${statsPort}` })).status, 403);
  });

  it('on 0.0.0.0, an Origin naming another IP with the same port is another site (a page cannot post to /keys)', async () => {
    // Any IP literal is accepted as the Host of a wildcard server, but a page at http://203.0.113.7:<port> is an
    // attacker's server on that port: a simple POST (no preflight) from it must not reach the admin endpoints.
    const host = `10.12.3.4:${statsPort}`;
    assert.equal((await get(`${gw.statsUrl}/metrics`, { host, origin: `http://203.0.113.7:${statsPort}` })).status, 403);
    assert.equal((await get(`${gw.statsUrl}/metrics`, { host, origin: `http://[fd00::99]:${statsPort}` })).status, 403);
    // The page served by the server itself (Origin = Host) and a loopback name with its port still pass.
    assert.equal((await get(`${gw.statsUrl}/metrics`, { host, origin: `http://${host}` })).status, 200);
    assert.equal((await get(`${gw.statsUrl}/metrics`, { host: `localhost:${statsPort}`, origin: `http://127.0.0.1:${statsPort}` })).status, 200);
  });

  it('a server on loopback refuses other IP literals (only a wildcard bind serves any address)', async () => {
    assert.equal((await get(`${gw.adminUrl}/config_dump`, { host: `10.12.3.4:${adminPort}` })).status, 403);
  });
});
