// A reload that fails must leave the kept JWKS fetching as the live config does (ADR 0139). The failed compile used to
// hand the kept key set a fetcher bound to its own connection: a refetch then took the JWKS pool under that dropped
// compile, which nothing releases, so the pool (and its keep-alive connection to the identity provider) outlived every
// config naming the URL.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import { writeFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import * as jose from 'jose';
import { request } from 'undici';
import { stringify } from 'yaml';
import type { RunningGateway } from '../helpers/gateway.ts';
import { startGatewayOnFreePorts, waitFor } from './proxy-support.ts';

const ISSUER = 'https://idp.example';

describe('JWKS after a failed reload', () => {
  let gw: RunningGateway;
  let port: number;
  let jwks: Server;
  let fetches = 0;
  const open = new Set<Socket>();

  const config = (routes: unknown[]): Record<string, unknown> => ({ binds: [{ port, listeners: [{ routes }] }] });
  const provider = (jwksPort: number) => ({ issuer: ISSUER, jwks: { url: `http://127.0.0.1:${jwksPort}/jwks` } });

  before(async () => {
    const { publicKey } = await jose.generateKeyPair('ES256', { extractable: true });
    const publicJwk = { ...(await jose.exportJWK(publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' };
    jwks = createServer((_req, res) => {
      fetches++;
      res.writeHead(200, { 'content-type': 'application/jwk-set+json' });
      res.end(JSON.stringify({ keys: [publicJwk] }));
    });
    // Kept open by the server far longer than the test: only the gateway closing its pool ends the connection.
    jwks.keepAliveTimeout = 120_000;
    jwks.on('connection', (s: Socket) => {
      open.add(s);
      s.on('close', () => open.delete(s));
    });
    await new Promise<void>((r) => jwks.listen(0, '127.0.0.1', r));
    const jwksPort = (jwks.address() as { port: number }).port;
    ({ gw, ports: [port] } = await startGatewayOnFreePorts(1, ([p]) => {
      port = p!;
      return config([{ policies: { jwtAuth: { providers: [provider(jwksPort)] }, directResponse: { status: 200, body: 'in' } } }]);
    }));
  });
  after(async () => {
    await gw?.stop();
    jwks?.closeAllConnections();
    await new Promise((r) => jwks?.close(r));
  });

  it('a dropped URL closes its pool even when a refetch came after a reload that failed', async () => {
    const jwksPort = (jwks.address() as { port: number }).port;
    assert.equal(fetches, 1);
    // The same provider beside one whose key file does not exist: the compile fails after the URL's provider compiled.
    writeFileSync(
      gw.file,
      stringify(config([{ policies: { jwtAuth: { providers: [provider(jwksPort), { issuer: 'other', jwks: { file: '/nonexistent/jwks.json' } }] }, directResponse: { status: 200, body: 'in' } } }])),
    );
    assert.equal(await gw.gateway.reload(), false);
    // A token naming a key id the set does not hold: fetched again at once.
    const unsigned = (part: object): string => Buffer.from(JSON.stringify(part)).toString('base64url');
    const token = `${unsigned({ alg: 'ES256', kid: 'rotated' })}.${unsigned({ iss: ISSUER, sub: 'a', exp: Math.floor(Date.now() / 1000) + 60 })}.${'A'.repeat(86)}`;
    const res = await request(`${gw.url(port)}/`, { headers: { authorization: `Bearer ${token}` } });
    await res.body.text();
    assert.equal(res.statusCode, 401);
    assert.equal(fetches, 2, 'the unknown key id was fetched again');
    assert.equal(open.size, 1, 'one keep-alive connection to the JWKS server');
    // A config without the URL: once the first one retires, nothing uses the pool.
    writeFileSync(gw.file, stringify(config([{ policies: { directResponse: { status: 200, body: 'open' } } }])));
    assert.equal(await gw.gateway.reload(), true);
    await waitFor(() => open.size === 0, 3000, 'the JWKS connection to close with its pool');
  });
});
