// The URLs the gateway advertises about itself (the a2a agent card, mcpAuthentication's resource_metadata challenge
// and protected-resource metadata) follow the forwarding-header trust model of ADR 0014: X-Forwarded-Proto,
// X-Forwarded-Host and Forwarded count only from a peer in `config.trustedProxies`.
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { generateKeyPair, exportJWK } from 'jose';
import { connect } from 'node:net';
import { request } from 'undici';
import { startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';
import { testTempDir } from '../helpers/temp-dir.ts';

const PR = '/.well-known/oauth-protected-resource';

describe('advertised URLs and forwarding headers (trustedProxies)', () => {
  let agent: TestUpstream;
  let jwks: string;
  const gateways: RunningGateway[] = [];
  let untrusted: string;
  let trusted: string;

  async function start(trustedProxies: string[] | undefined): Promise<string> {
    const port = await freePort();
    const gw = await startGateway({
      config: { logging: { format: 'json', level: 'error' }, ...(trustedProxies ? { trustedProxies } : {}) },
      binds: [
        {
          port,
          listeners: [
            {
              routes: [
                {
                  name: 'agent',
                  matches: [{ path: { pathPrefix: '/agent' } }],
                  policies: { a2a: {}, urlRewrite: { path: { prefix: '/' } } },
                  backends: [{ host: `127.0.0.1:${agent.port}` }],
                },
                {
                  name: 'bare',
                  matches: [{ path: { pathPrefix: '/bare' } }],
                  policies: {
                    mcpAuthentication: { issuer: 'https://issuer.test', audiences: ['api'], jwks: { file: jwks }, mode: 'strict' },
                    directResponse: { status: 200, body: 'ok' },
                  },
                },
                {
                  name: 'mcp',
                  matches: [{ path: { pathPrefix: '/mcp' } }, { path: { pathPrefix: `${PR}/mcp` } }],
                  policies: {
                    mcpAuthentication: {
                      issuer: 'https://issuer.test',
                      audiences: ['api'],
                      jwks: { file: jwks },
                      mode: 'strict',
                      provider: { identityProviderA: {} },
                      resourceMetadata: { resource: 'https://api.test/mcp' },
                    },
                    directResponse: { status: 200, body: 'ok' },
                  },
                },
              ],
            },
          ],
        },
      ],
    });
    gateways.push(gw);
    return gw.url(port);
  }

  before(async () => {
    agent = await startUpstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ name: 'a', protocolVersion: '0.3.0', url: 'http://10.0.0.9:9999/' }));
    });
    const dir = testTempDir('switchyard-fwd-');
    const { publicKey } = await generateKeyPair('RS256', { extractable: true });
    jwks = join(dir, 'jwks.json');
    writeFileSync(jwks, JSON.stringify({ keys: [{ ...(await exportJWK(publicKey)), kid: 'k', alg: 'RS256', use: 'sig' }] }));
    untrusted = await start(undefined);
    trusted = await start(['127.0.0.1/32']);
  });

  after(async () => {
    for (const gw of gateways) await gw.stop();
    await agent.close();
  });

  const hostile = { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'evil.example', host: 'gw.example:8080' };

  async function cardUrl(base: string, headers: Record<string, string>): Promise<string> {
    const res = await request(`${base}/agent/.well-known/agent.json`, { headers });
    assert.equal(res.statusCode, 200);
    return ((await res.body.json()) as { url: string }).url;
  }

  async function challenge(base: string, headers: Record<string, string>): Promise<string> {
    const res = await request(`${base}/bare/x`, { headers });
    assert.equal(res.statusCode, 401);
    await res.body.dump();
    return res.headers['www-authenticate'] as string;
  }

  async function authorizationServer(base: string, headers: Record<string, string>): Promise<string> {
    const res = await request(`${base}${PR}/mcp`, { headers });
    assert.equal(res.statusCode, 200);
    return ((await res.body.json()) as { authorization_servers: string[] }).authorization_servers[0]!;
  }

  it('an untrusted peer cannot choose the scheme or host of the agent card URL', async () => {
    assert.equal(await cardUrl(untrusted, hostile), 'http://gw.example:8080/agent');
    assert.equal(await cardUrl(untrusted, { host: 'gw.example:8080', forwarded: 'proto=https;host=evil.example' }), 'http://gw.example:8080/agent');
  });

  it('an untrusted peer cannot choose the resource_metadata URL or the metadata document', async () => {
    assert.equal(await challenge(untrusted, hostile), `Bearer resource_metadata="http://gw.example:8080${PR}/bare/x"`);
    assert.equal(await challenge(untrusted, { host: 'gw.example:8080', forwarded: 'proto=https;host=evil.example' }), `Bearer resource_metadata="http://gw.example:8080${PR}/bare/x"`);
    assert.equal(await authorizationServer(untrusted, hostile), 'http://gw.example:8080/mcp');
    assert.equal(await authorizationServer(untrusted, { host: 'gw.example:8080', forwarded: 'proto=https;host=evil.example' }), 'http://gw.example:8080/mcp');
  });

  it('a trusted proxy names the external scheme and host', async () => {
    assert.equal(await cardUrl(trusted, hostile), 'https://evil.example/agent');
    assert.equal(await cardUrl(trusted, { host: 'gw.example:8080', forwarded: 'for=1.2.3.4;proto=https;host="ext.example:8443", proto=http' }), 'https://ext.example:8443/agent');
    assert.equal(await authorizationServer(trusted, hostile), 'https://evil.example/mcp');
    assert.equal(await challenge(trusted, hostile), `Bearer resource_metadata="https://evil.example${PR}/bare/x"`);
    // Without forwarding headers, the client's Host and the listener's scheme.
    assert.equal(await cardUrl(trusted, { host: 'gw.example:8080' }), 'http://gw.example:8080/agent');
  });

  it('a trusted proxy: a malformed forwarded host or scheme is ignored', async () => {
    assert.equal(await cardUrl(trusted, { host: 'gw.example', 'x-forwarded-host': 'a b/c"', 'x-forwarded-proto': 'javascript' }), 'http://gw.example/agent');
  });

  it('a request that named no host (HTTP/1.0 without Host, an empty Host) advertises the address it reached', async () => {
    const { port } = new URL(untrusted);
    const raw = (head: string): Promise<string> =>
      new Promise((done, fail) => {
        const socket = connect(Number(port), '127.0.0.1', () => socket.end(head));
        let text = '';
        socket.setEncoding('latin1').on('data', (d: string) => (text += d));
        socket.on('end', () => done(text)).on('error', fail);
      });
    for (const head of ['GET /bare/x HTTP/1.0\r\n\r\n', 'GET /bare/x HTTP/1.0\r\nHost:\r\n\r\n']) {
      const answer = await raw(head);
      assert.match(answer, /^HTTP\/1\.[01] 401/);
      assert.match(answer, new RegExp(`www-authenticate: Bearer resource_metadata="http://127\\.0\\.0\\.1:${port}${PR}/bare/x"`, 'i'), answer);
    }
  });
});
