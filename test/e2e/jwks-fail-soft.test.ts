// Identity provider outages fail soft (ADR 0020): a `jwks.url` that refuses connections at start does not stop the
// gateway. Other routes serve; that route answers a token with 503 + Retry-After (a missing token in strict mode is
// still 401) until the keys arrive; the JWKS keeps being fetched with backoff, and once its server comes up a valid
// token passes. The readiness endpoint reports ready meanwhile. A reload while the JWKS server is down keeps serving.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import { after, before, describe, it } from 'node:test';
import * as jose from 'jose';
import { request } from 'undici';
import { stringify } from 'yaml';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';
import { startGatewayOnFreePorts, waitFor } from './proxy-support.ts';

const ISSUER = 'https://idp.example';
const AUDIENCE = 'orders';

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

describe('JWKS outage at start', () => {
  let gw: RunningGateway;
  let port: number;
  let upstream: TestUpstream;
  let jwksPort: number;
  let jwksServer: Server | undefined;
  let jwksRequests = 0;
  let publicJwk: jose.JWK;
  let token: string;
  let config: (extraRoutes?: unknown[]) => Record<string, unknown>;

  async function call(path: string, bearer?: string): Promise<Answer> {
    const res = await request(`${gw.url(port)}${path}`, { headers: bearer === undefined ? {} : { authorization: `Bearer ${bearer}` } });
    return { status: res.statusCode, headers: res.headers, body: await res.body.text() };
  }

  function startJwksServer(): Promise<void> {
    jwksServer = createServer((_req, res) => {
      jwksRequests++;
      res.writeHead(200, { 'content-type': 'application/jwk-set+json' });
      res.end(JSON.stringify({ keys: [publicJwk] }));
    });
    return new Promise((resolve, reject) => {
      jwksServer!.once('error', reject);
      jwksServer!.listen(jwksPort, '127.0.0.1', () => resolve());
    });
  }

  function stopJwksServer(): Promise<void> {
    return new Promise((resolve) => {
      jwksServer!.close(() => resolve());
      jwksServer!.closeAllConnections();
    });
  }

  before(async () => {
    const { publicKey, privateKey } = await jose.generateKeyPair('ES256', { extractable: true });
    publicJwk = { ...(await jose.exportJWK(publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' };
    token = await new jose.SignJWT({ sub: 'alice' })
      .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
      .setIssuer(ISSUER)
      .setAudience(AUDIENCE)
      .setIssuedAt()
      .setExpirationTime('1h')
      .sign(privateKey);
    upstream = await startUpstream();
    // Nothing listens here yet: connections are refused.
    jwksPort = await freePort();
    const host = `127.0.0.1:${upstream.port}`;
    config = (extraRoutes = []) => ({
      binds: [
        {
          port,
          listeners: [
            {
              routes: [
                {
                  name: 'secure',
                  matches: [{ path: { pathPrefix: '/secure' } }],
                  policies: { jwtAuth: { mode: 'strict', issuer: ISSUER, audiences: [AUDIENCE], jwks: { url: `http://127.0.0.1:${jwksPort}/jwks` } } },
                  backends: [{ host }],
                },
                {
                  name: 'mcp-secure',
                  matches: [{ path: { pathPrefix: '/mcp-secure' } }],
                  policies: { mcpAuthentication: { mode: 'strict', issuer: ISSUER, audiences: [AUDIENCE], jwks: { url: `http://127.0.0.1:${jwksPort}/jwks` } } },
                  backends: [{ host }],
                },
                ...extraRoutes,
                { name: 'open', backends: [{ host }] },
              ],
            },
          ],
        },
      ],
    });
    ({ gw, ports: [port] } = await startGatewayOnFreePorts(1, ([p]) => {
      port = p!;
      return config();
    }));
  });
  after(async () => {
    await gw?.stop();
    await upstream?.close();
    if (jwksServer?.listening) await stopJwksServer();
  });

  it('starts, serves other routes, reports ready and says why in the log', async () => {
    assert.equal((await call('/open')).status, 200);
    const ready = await request(`${gw.readinessUrl}/healthz/ready`);
    assert.equal(ready.statusCode, 200);
    await ready.body.text();
    assert.ok(
      gw.logs.some((l) => /cannot load the JWKS from http:\/\/127\.0\.0\.1:\d+\/jwks: .*ECONNREFUSED.*get 503 until the keys load/.test(l) && /jwks\.url/.test(l)),
      `a clear warning with the config path, got:\n${gw.logs.join('\n')}`,
    );
  });

  it('answers a token on that route with 503 and Retry-After; a missing token is still 401', async () => {
    for (const path of ['/secure', '/mcp-secure']) {
      const a = await call(path, token);
      assert.equal(a.status, 503, `${path}: ${a.body}`);
      assert.equal(a.headers['content-type'], 'application/json');
      assert.match(String(a.headers['retry-after']), /^\d+$/);
      assert.equal(a.headers['www-authenticate'], undefined, 'no challenge: the token may be fine');
      const body = JSON.parse(a.body) as { error: { type: string; message: string } };
      assert.equal(body.error.type, 'authentication_unavailable');
      assert.match(body.error.message, /signing keys .* not available/);
      assert.ok(!body.error.message.includes(String(jwksPort)), 'the JWKS location is not disclosed');
      assert.equal((await call(path)).status, 401);
    }
    assert.equal(upstream.received.length, 1, 'only the /open request reached the upstream');
  });

  it('a reload while the JWKS is still down applies and keeps serving', async () => {
    const extra = { name: 'extra', matches: [{ path: { pathPrefix: '/extra' } }], backends: [{ host: `127.0.0.1:${upstream.port}` }] };
    assert.equal(await gw.gateway.reload(stringify(config([extra]))), true);
    assert.equal((await call('/extra')).status, 200);
    assert.equal((await call('/secure', token)).status, 503);
  });

  it('once the JWKS server is up, a valid token passes after backoff', async () => {
    await startJwksServer();
    await waitFor(async () => (await call('/secure', token)).status === 200, 20_000, 'the JWKS to load in the background');
    assert.equal(upstream.received.at(-1)!.headers.authorization, undefined, 'the accepted token is not forwarded');
    assert.equal((await call('/mcp-secure', token)).status, 200);
    assert.ok(jwksRequests >= 1);
    assert.ok(gw.logs.some((l) => /JWKS loaded; tokens of this issuer are checked again/.test(l)));
    // Backoff is bounded and jittered: a handful of attempts in these seconds, not a tight loop.
    const attempts = gw.logs.filter((l) => /JWKS still unavailable/.test(l)).length;
    assert.ok(attempts < 15, `${attempts} background attempts`);
  });

  it('a reload with the JWKS server gone again keeps the held keys', async () => {
    await stopJwksServer();
    assert.equal(await gw.gateway.reload(stringify(config())), true);
    assert.equal((await call('/secure', token)).status, 200);
    assert.equal((await call('/open')).status, 200);
  });
});
