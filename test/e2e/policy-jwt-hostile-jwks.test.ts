import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import { after, before, describe, it } from 'node:test';
import * as jose from 'jose';
import { request } from 'undici';
import apiKey from '../../plugins/policies/api-key/plugin.ts';
import basicAuth from '../../plugins/policies/basic-auth/plugin.ts';
import jwtAuth from '../../plugins/policies/jwt-auth/plugin.ts';
import { fullPresetWith } from '../helpers/preset.ts';
import { startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';

const ISS = 'https://hostile-jwks.test';

/** Identity providers whose JWKS endpoints misbehave (ADR 0198): they must never stall or flood the gateway. */
describe('jwtAuth against a hostile JWKS endpoint', () => {
  let gw: RunningGateway;
  let port: number;
  let upstream: TestUpstream;
  let signingKey: jose.CryptoKey;
  let publicJwk: jose.JWK;
  /** `ok` answers the key set; `trickle` sends headers and then a space every 200 ms, forever. */
  let mode: 'ok' | 'trickle' = 'ok';
  let slowAsked = 0;
  let hugeAsked = 0;
  let slow: Server;
  let huge: Server;

  const listen = async (server: Server): Promise<number> => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return (server.address() as { port: number }).port;
  };
  const token = (kid: string): Promise<string> =>
    new jose.SignJWT({ iss: ISS, sub: 'alice', exp: Math.floor(Date.now() / 1000) + 300 }).setProtectedHeader({ alg: 'ES256', kid }).sign(signingKey);
  async function call(path: string, bearer: string) {
    const t0 = performance.now();
    const res = await request(`${gw.url(port)}${path}`, { headers: { authorization: `Bearer ${bearer}` } });
    const body = await res.body.text();
    return { status: res.statusCode, ms: performance.now() - t0, headers: res.headers, body };
  }

  before(async () => {
    const pair = await jose.generateKeyPair('ES256');
    signingKey = pair.privateKey;
    publicJwk = { ...(await jose.exportJWK(pair.publicKey)), kid: 'k1' };
    slow = createServer((_req, res) => {
      slowAsked++;
      if (mode === 'ok') return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [publicJwk] }));
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"keys":[');
      const timer = setInterval(() => res.write(' '), 200);
      res.on('close', () => clearInterval(timer));
    });
    // 50 MiB of JSON whitespace: a set that would only parse after all of it.
    huge = createServer((_req, res) => {
      hugeAsked++;
      res.on('error', () => undefined);
      res.writeHead(200, { 'content-type': 'application/json' });
      const chunk = Buffer.alloc(1 << 20, 32);
      let sent = 0;
      const pump = (): void => {
        while (sent < 50 && !res.destroyed) {
          sent++;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
        if (!res.destroyed) res.end();
      };
      pump();
    });
    const [slowPort, hugePort] = await Promise.all([listen(slow), listen(huge)]);
    port = await freePort();
    upstream = await startUpstream();
    const route = (name: string, jwksPort: number) => ({
      name,
      matches: [{ path: { pathPrefix: `/${name}` } }],
      policies: { jwtAuth: { issuer: ISS, jwks: { url: `http://127.0.0.1:${jwksPort}/jwks` }, mode: 'strict' } },
      backends: [{ host: `127.0.0.1:${upstream.port}` }],
    });
    gw = await startGateway({ binds: [{ port, listeners: [{ routes: [route('slow', slowPort), route('huge', hugePort)] }] }] }, { preset: fullPresetWith(jwtAuth, apiKey, basicAuth) });
  });

  after(async () => {
    await gw?.stop();
    await upstream?.close();
    for (const server of [slow, huge]) {
      server?.closeAllConnections();
      server?.close();
    }
  });

  it('a 50 MiB key set is cut at 1 MiB: the gateway starts, and tokens of that issuer get 503 at once', async () => {
    assert.ok(hugeAsked >= 1);
    // Logs are written in batches: give the line a moment.
    const logged = () => gw.logs.find((l) => l.includes('cannot load the JWKS'));
    for (let i = 0; i < 100 && !logged(); i++) await new Promise((resolve) => setTimeout(resolve, 10));
    assert.match(logged() ?? gw.logs.slice(-5).join('\n'), /cannot load the JWKS from http:\/\/127\.0\.0\.1:\d+\/jwks: the body is larger than 1048576 bytes/);
    const a = await call('/huge', await token('k1'));
    assert.equal(a.status, 503, a.body);
    assert.ok(Number(a.headers['retry-after']) >= 1);
    assert.ok(a.ms < 1000, `answered in ${Math.round(a.ms)} ms`);
  });

  it('a key set that stops mid-answer: unknown kids wait at most the 5 s fetch timeout, one fetch for all; known kids never wait', async () => {
    assert.equal((await call('/slow', await token('k1'))).status, 200);
    const askedBefore = slowAsked;
    mode = 'trickle';
    const tokens = await Promise.all(Array.from({ length: 20 }, (_, i) => token(`made-up-${i}`)));
    const flood = Promise.all(tokens.map((t) => call('/slow', t)));
    await new Promise((resolve) => setTimeout(resolve, 300));
    const known = await call('/slow', await token('k1'));
    assert.equal(known.status, 200, 'a known kid is answered from the held keys while the fetch hangs');
    assert.ok(known.ms < 1000, `a known kid waited ${Math.round(known.ms)} ms`);
    const answers = await flood;
    for (const a of answers) {
      assert.equal(a.status, 401, a.body);
      assert.match(a.body, /unknown key/);
      assert.ok(a.ms < 8000, `an unknown kid waited ${Math.round(a.ms)} ms`);
    }
    assert.equal(slowAsked, askedBefore + 1, 'twenty unknown kids made one fetch');
    // Within the refetch interval another unknown kid is refused at once, without asking the endpoint.
    const next = await call('/slow', await token('made-up-again'));
    assert.equal(next.status, 401);
    assert.ok(next.ms < 1000);
    assert.equal(slowAsked, askedBefore + 1);
  });
});
