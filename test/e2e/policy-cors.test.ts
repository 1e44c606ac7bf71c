import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { request } from 'undici';
import { oneListenerConfig, startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';

describe('cors', () => {
  let gw: RunningGateway;
  let port: number;
  let upstream: TestUpstream;
  const cors = {
    allowOrigins: ['https://app.example.com', 'https://*.tenant.test', 'http://localhost:3000'],
    allowHeaders: ['content-type', 'x-custom'],
    allowMethods: ['GET', 'POST'],
    exposeHeaders: ['x-upstream'],
    allowCredentials: true,
    maxAge: '86400s',
  };
  before(async () => {
    port = await freePort();
    upstream = await startUpstream();
    gw = await startGateway(oneListenerConfig(port, [
      {
        name: 'limited',
        matches: [{ path: { pathPrefix: '/limited' } }],
        policies: { cors, localRateLimit: [{ maxTokens: 1, tokensPerFill: 1, fillInterval: '1h' }] },
        backends: [{ host: `127.0.0.1:${upstream.port}` }],
      },
      { name: 'any', matches: [{ path: { pathPrefix: '/any' } }], policies: { cors: { allowOrigins: ['*'], allowMethods: ['*'], allowHeaders: ['*'] } }, backends: [{ host: `127.0.0.1:${upstream.port}` }] },
      { name: 'api', policies: { cors }, backends: [{ host: `127.0.0.1:${upstream.port}` }] },
    ]));
  });
  after(async () => {
    await gw.stop();
    await upstream.close();
  });

  it('answers an allowed preflight locally with the full CORS header set', async () => {
    const seen = upstream.received.length;
    const res = await request(`${gw.url(port)}/api/x`, {
      method: 'OPTIONS',
      headers: { origin: 'https://app.example.com', 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' },
    });
    assert.equal(res.statusCode, 200);
    assert.equal(await res.body.text(), '');
    // An empty local answer says so, as Envoy's does, instead of an empty chunked body.
    assert.equal(res.headers['content-length'], '0');
    assert.equal(res.headers['transfer-encoding'], undefined);
    assert.equal(res.headers['access-control-allow-origin'], 'https://app.example.com');
    assert.equal(res.headers['access-control-allow-methods'], 'GET,POST');
    assert.equal(res.headers['access-control-allow-headers'], 'content-type,x-custom');
    assert.equal(res.headers['access-control-max-age'], '86400');
    assert.equal(res.headers['access-control-allow-credentials'], 'true');
    assert.equal(upstream.received.length, seen, 'the backend is not contacted');
  });

  it('a disallowed preflight gets no CORS headers and never reaches the backend', async () => {
    const seen = upstream.received.length;
    const res = await request(`${gw.url(port)}/api/x`, {
      method: 'OPTIONS',
      headers: { origin: 'https://evil.example.org', 'access-control-request-method': 'POST' },
    });
    assert.equal(res.statusCode, 200);
    await res.body.text();
    assert.equal(res.headers['access-control-allow-origin'], undefined);
    assert.equal(res.headers['access-control-allow-methods'], undefined);
    assert.equal(upstream.received.length, seen);
  });

  it('wildcard subdomain origins match; the bare domain and other schemes/ports do not', async () => {
    const check = async (origin: string): Promise<string | undefined> => {
      const res = await request(`${gw.url(port)}/api/x`, { headers: { origin } });
      await res.body.text();
      return res.headers['access-control-allow-origin'] as string | undefined;
    };
    assert.equal(await check('https://a.tenant.test'), 'https://a.tenant.test');
    assert.equal(await check('https://a.b.tenant.test'), 'https://a.b.tenant.test');
    assert.equal(await check('https://tenant.test'), undefined);
    assert.equal(await check('http://a.tenant.test'), undefined);
    assert.equal(await check('http://localhost:3000'), 'http://localhost:3000');
    assert.equal(await check('http://localhost:3001'), undefined);
  });

  it('actual requests from an allowed origin get allow-origin, credentials and expose-headers; Vary: Origin', async () => {
    const res = await request(`${gw.url(port)}/api/x`, { headers: { origin: 'https://app.example.com' } });
    assert.equal(res.statusCode, 200);
    await res.body.text();
    assert.equal(res.headers['access-control-allow-origin'], 'https://app.example.com');
    assert.equal(res.headers['access-control-allow-credentials'], 'true');
    assert.equal(res.headers['access-control-expose-headers'], 'x-upstream');
    assert.match(String(res.headers.vary), /Origin/);
    assert.equal(upstream.received.at(-1)!.headers.origin, 'https://app.example.com', 'the request itself still goes upstream');
  });

  it('CORS headers are present on a 429 produced later in the chain', async () => {
    const origin = 'https://app.example.com';
    const first = await request(`${gw.url(port)}/limited`, { headers: { origin } });
    await first.body.text();
    assert.equal(first.statusCode, 200);
    const denied = await request(`${gw.url(port)}/limited`, { headers: { origin } });
    await denied.body.text();
    assert.equal(denied.statusCode, 429);
    assert.equal(denied.headers['access-control-allow-origin'], origin);
    assert.equal(denied.headers['access-control-expose-headers'], 'x-upstream');
  });

  it('`*` allows any origin and echoes it; wildcard methods/headers answer `*` without credentials', async () => {
    const res = await request(`${gw.url(port)}/any`, {
      method: 'OPTIONS',
      headers: { origin: 'https://whoever.io', 'access-control-request-method': 'PATCH', 'access-control-request-headers': 'x-a' },
    });
    await res.body.text();
    assert.equal(res.headers['access-control-allow-origin'], 'https://whoever.io');
    assert.equal(res.headers['access-control-allow-methods'], '*');
    assert.equal(res.headers['access-control-allow-headers'], '*');
  });

  it('requests without Origin are untouched', async () => {
    const res = await request(`${gw.url(port)}/api/x`);
    await res.body.text();
    assert.equal(res.headers['access-control-allow-origin'], undefined);
  });

  it('an invalid origin entry is a config error', async () => {
    await assert.rejects(
      gw.gateway.compile(`binds:\n- port: ${port}\n  listeners:\n  - routes:\n    - policies:\n        cors:\n          allowOrigins: ["ftp://x"]\n`),
      /:7:25: `ftp:\/\/x` is not an origin/,
    );
  });
});
