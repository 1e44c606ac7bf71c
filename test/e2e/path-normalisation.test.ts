import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import type { RunningGateway } from '../helpers/gateway.ts';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';
import { rawRequest, startGatewayOnFreePorts } from './proxy-support.ts';
import type { RawResponse } from './proxy-support.ts';
import { testTempDir } from '../helpers/temp-dir.ts';

// Paths are normalised before a route is chosen (docs/adr/0013-path-normalisation.md): a path that an upstream
// would resolve to another route's prefix must either be rejected with 400 or be matched, and forwarded, as the
// path it resolves to. Each route tags what it forwards with `x-route`, so the upstream shows which route sent it.

const ISSUER = 'https://issuer.test';

describe('path normalisation before route selection', () => {
  let gw: RunningGateway;
  let port: number;
  let options: RunningGateway;
  let optionsPort: number;
  let up: TestUpstream;
  let token: string;

  const tagged = (name: string, extra: Record<string, unknown>, policies: Record<string, unknown> = {}) => ({
    name,
    ...extra,
    policies: { requestHeaderModifier: { set: { 'x-route': name } }, ...policies },
    backends: [{ host: `127.0.0.1:${up.port}` }],
  });

  const routes = (jwksFile: string) => [
    // A public route in front of an authenticated one: the layout a traversal would bypass.
    tagged('api', { matches: [{ path: { pathPrefix: '/api' } }] }),
    tagged('rw', { matches: [{ path: { pathPrefix: '/rw' } }] }, { urlRewrite: { path: { prefix: '/public' } } }),
    tagged('private', { matches: [{ path: { pathPrefix: '/private' } }] }, { jwtAuth: { mode: 'strict', issuer: ISSUER, jwks: { file: jwksFile } } }),
    tagged('fallback', {}),
  ];

  before(async () => {
    up = await startUpstream();
    const { publicKey, privateKey } = await generateKeyPair('RS256');
    const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' };
    const dir = testTempDir('switchyard-paths-');
    const jwksFile = join(dir, 'jwks.json');
    writeFileSync(jwksFile, JSON.stringify({ keys: [jwk] }));
    token = await new SignJWT({ sub: 'alice' }).setProtectedHeader({ alg: 'RS256', kid: 'k1' }).setIssuer(ISSUER).setIssuedAt().setExpirationTime('5m').sign(privateKey);
    ({ gw, ports: [port] } = await startGatewayOnFreePorts(1, ([p]) => ({ binds: [{ port: p, listeners: [{ routes: routes(jwksFile) }] }] })));
    ({ gw: options, ports: [optionsPort] } = await startGatewayOnFreePorts(1, ([p]) => ({
      config: { mergeSlashes: false, escapedSlashes: 'keep' },
      binds: [{ port: p, listeners: [{ routes: routes(jwksFile) }] }],
    })));
  });

  after(async () => {
    await gw?.stop();
    await options?.stop();
    await up?.close();
  });

  /** Send `target` as written (raw socket: no client library tidies it) and return the reply and what the upstream got. */
  async function send(p: number, target: string, extra = ''): Promise<{ res: RawResponse; upstream: { url: string; route: string } | undefined }> {
    const before = up.received.length;
    const res = await rawRequest(p, `GET ${target} HTTP/1.1\nHost: h${extra}\nConnection: close`);
    const got = up.received.length > before ? up.received[up.received.length - 1]! : undefined;
    return { res, upstream: got ? { url: got.url, route: String(got.headers['x-route']) } : undefined };
  }

  // [request target, expected: 400 | 401 (the private route's jwtAuth) | [route, path the upstream receives]]
  const CASES: [string, 400 | 401 | [string, string]][] = [
    // Prefix route in front of an authenticated route.
    ['/api/../private/x', 401],
    ['/api/%2e%2e/private/x', 401],
    ['/api/%2E%2E/private/x', 401],
    ['/api/.%2e/private/x', 401],
    ['/api/..%2fprivate/x', 400],
    ['/api/..%2Fprivate/x', 400],
    ['/api/..;/private/x', 400],
    ['/api/..;jsessionid=1/private/x', 400],
    ['/api/..\\private/x', 400],
    ['/api/..%5cprivate/x', 400],
    ['/api/x/../../private/x', 401],
    ['/api/./../private/x', 401],
    // Rewrite route: the upstream must never get `/public/../etc/passwd`.
    ['/rw/../etc/passwd', ['fallback', '/etc/passwd']],
    ['/rw/%2e%2e/etc/passwd', ['fallback', '/etc/passwd']],
    ['/rw/..%2fetc/passwd', 400],
    ['/rw/..;/etc/passwd', 400],
    ['/rw/..\\etc/passwd', 400],
    ['/rw/a/../b', ['rw', '/public/b']],
    ['/rw/a/./b/', ['rw', '/public/a/b/']],
    // Normal forms the upstream receives.
    ['/api//x', ['api', '/api/x']],
    ['//api/x', ['api', '/api/x']],
    ['/../../api/x', ['api', '/api/x']],
    ['/api/./x/%7Euser/%41b', ['api', '/api/x/~user/Ab']],
    ['/api/x%20y/%e2%9c%93', ['api', '/api/x%20y/%E2%9C%93']],
    ['/api/a;b=c/d?q=%2F..%2F', ['api', '/api/a;b=c/d?q=%2F..%2F']],
    ['/api/x/..', ['api', '/api/']],
    // Absolute form: the path part is normalised like any other.
    ['http://h/api/../private/x', 401],
    ['HTTP://h/api//x', ['api', '/api/x']],
    ['https://h', ['fallback', '/']],
    ['http:///api/x', 400],
    ['ftp://h/api/x', 400],
    ['*', 400],
    ['/api/%zz', 400],
    ['/api/x%2', 400],
    ['/api/%00', 400],
    // Overlong UTF-8 for `..` and `/` (Tomcat CVE-2008-2938 read them as such): refused (ADR 0166).
    ['/api/%C0%AE%C0%AE/private/x', 400],
    ['/api/%E0%80%AE%E0%80%AE%C0%AFprivate/x', 400],
    ['/api/%C2%A9', ['api', '/api/%C2%A9']],
  ];

  for (const [target, expected] of CASES) {
    it(`${target} → ${Array.isArray(expected) ? `${expected[0]} ${expected[1]}` : expected}`, async () => {
      const { res, upstream } = await send(port, target);
      if (Array.isArray(expected)) {
        assert.equal(res.status, 200, res.body.toString());
        assert.deepEqual(upstream, { route: expected[0], url: expected[1] });
      } else {
        assert.equal(res.status, expected, res.body.toString());
        assert.equal(upstream, undefined, `the upstream received ${JSON.stringify(upstream)}`);
      }
    });
  }

  it('a traversal into the authenticated route reaches it with a valid token, as the normalised path', async () => {
    for (const target of ['/api/../private/x', '/api/%2e%2e/private/x']) {
      const { res, upstream } = await send(port, target, `\nAuthorization: Bearer ${token}`);
      assert.equal(res.status, 200, res.body.toString());
      assert.deepEqual(upstream, { route: 'private', url: '/private/x' });
    }
  });

  it('the 400 is the gateway\'s JSON error', async () => {
    const { res } = await send(port, '/api/..%2fprivate/x');
    assert.equal(res.status, 400);
    const body = JSON.parse(res.body.toString()) as { error: { type: string; message: string } };
    assert.equal(body.error.type, 'bad_request');
    assert.match(body.error.message, /%2F/);
  });

  it('`mergeSlashes: false` keeps empty segments', async () => {
    const { res, upstream } = await send(optionsPort, '/api//x');
    assert.equal(res.status, 200);
    assert.deepEqual(upstream, { route: 'api', url: '/api//x' });
    // Dot segments are still removed: `//..` drops the empty segment, not `api`.
    assert.deepEqual((await send(optionsPort, '/api//../x')).upstream, { route: 'api', url: '/api/x' });
  });

  it('`escapedSlashes: keep` forwards %2F and %5C escaped and never splits a segment on them', async () => {
    for (const [target, url] of [
      ['/api/..%2fprivate/x', '/api/..%2Fprivate/x'],
      ['/api/..%5cprivate/x', '/api/..%5Cprivate/x'],
      ['/rw/..%2fetc/passwd', '/public/..%2Fetc/passwd'],
    ] as const) {
      const { res, upstream } = await send(optionsPort, target);
      assert.equal(res.status, 200, target);
      assert.equal(upstream?.url, url, target);
    }
    // The other rejections stay.
    assert.equal((await send(optionsPort, '/api/..;/private/x')).res.status, 400);
    assert.equal((await send(optionsPort, '/api/..\\private/x')).res.status, 400);
  });
});
