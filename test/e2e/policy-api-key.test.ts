import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { IncomingHttpHeaders, Server } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { request } from 'undici';
import WebSocket, { WebSocketServer } from 'ws';
import { stringify } from 'yaml';
import apiKey from '../../plugins/policies/api-key/plugin.ts';
import basicAuth from '../../plugins/policies/basic-auth/plugin.ts';
import jwtAuth from '../../plugins/policies/jwt-auth/plugin.ts';
import { fullPresetWith } from '../helpers/preset.ts';
import { startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';

const PRESET = fullPresetWith(jwtAuth, apiKey, basicAuth);
const TEAM_KEY = 'sk-team-4f9a1c7e2b8d';
const BOT_KEY = 'sk-bot-0e6b3a91d27c5f';
/** Set through the environment, the usual way to keep keys out of the file. */
const ENV_KEY = 'sk-env-77aa18c0ffee';

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

describe('apiKey', () => {
  let gw: RunningGateway;
  let port: number;
  let upstream: TestUpstream;
  let wsHttp: Server;
  const handshakes: IncomingHttpHeaders[] = [];

  async function call(path: string, headers: Record<string, string> = {}): Promise<Answer> {
    const res = await request(`${gw.url(port)}${path}`, { headers });
    return { status: res.statusCode, headers: res.headers, body: await res.body.text() };
  }
  const seen = () => upstream.received.at(-1)!.headers;

  function assertRejected(a: Answer, message: string): void {
    assert.equal(a.status, 401, a.body);
    assert.equal(a.headers['content-type'], 'application/json');
    assert.deepEqual(JSON.parse(a.body), { error: { type: 'authentication_failed', message: `api key authentication failure: ${message}` } });
  }

  before(async () => {
    port = await freePort();
    upstream = await startUpstream();
    wsHttp = createServer((_req, res) => res.writeHead(426).end());
    new WebSocketServer({ server: wsHttp }).on('connection', (ws, req) => {
      handshakes.push(req.headers);
      ws.send('welcome');
    });
    await new Promise<void>((resolve) => wsHttp.listen(0, '127.0.0.1', resolve));
    const wsPort = (wsHttp.address() as { port: number }).port;
    const keys = [
      { key: TEAM_KEY, metadata: { team: 'payments', tier: 'gold', quota: 100, key: 'metadata cannot replace the key' } },
      { key: BOT_KEY },
      { key: '${API_KEY_FROM_ENV}', metadata: { team: 'env' } },
    ];
    const route = (name: string, policy: Record<string, unknown>) => ({
      name,
      matches: [{ path: { pathPrefix: `/${name}` } }],
      policies: {
        apiKey: { keys, ...policy },
        // CEL values: metadata fields of the accepted key.
        // CEL's request.headers never lists a withheld credential (they are blanked, not deleted: ADR 0015).
        transformations: {
          request: {
            set: {
              'x-team': 'apiKey.team',
              'x-tier': 'apiKey.tier',
              'x-key-is-team': 'apiKey.key.startsWith("sk-team-")',
              'x-sees-credential': 'request.headers.exists(k, k == "authorization" || k == "x-api-key") || has(request.headers.authorization) ? "yes" : "no"',
            },
          },
        },
      },
      backends: [{ host: `127.0.0.1:${name === 'ws' ? wsPort : upstream.port}` }],
    });
    gw = await startGateway(
      { binds: [{ port, listeners: [{ routes: [route('strict', { mode: 'strict' }), route('optional', {}), route('permissive', { mode: 'permissive' }), route('ws', { mode: 'strict' })] }] }] },
      { preset: PRESET, env: { ...process.env, API_KEY_FROM_ENV: ENV_KEY } },
    );
  });

  after(async () => {
    await gw?.stop();
    await upstream?.close();
    await new Promise((resolve) => (wsHttp ? wsHttp.close(resolve) : resolve(undefined)));
  });

  it('accepts a key from `Authorization: Bearer`, strips that header, and exposes the metadata to CEL', async () => {
    const a = await call('/strict', { authorization: `Bearer ${TEAM_KEY}`, 'x-other': 'kept' });
    assert.equal(a.status, 200, a.body);
    assert.equal(seen().authorization, undefined, 'DECIDED 6: the key does not go upstream');
    assert.equal(seen()['x-other'], 'kept');
    assert.equal(seen()['x-team'], 'payments');
    assert.equal(seen()['x-tier'], 'gold');
    assert.equal(seen()['x-key-is-team'], 'true', 'apiKey.key is the key itself, not a metadata field named `key`');
    assert.equal((await call('/strict', { authorization: `bearer ${TEAM_KEY}` })).status, 200, 'the scheme is case-insensitive');
  });

  it('CEL after apiKey does not see the withheld headers; a WebSocket upgrade with a key opens without them', async () => {
    assert.equal((await call('/strict', { 'x-api-key': TEAM_KEY, authorization: 'Basic dXBzdHJlYW06Y3JlZHM=' })).status, 200);
    assert.equal(seen()['x-sees-credential'], 'no');
    const ws = new WebSocket(`ws://127.0.0.1:${port}/ws`, { headers: { 'x-api-key': TEAM_KEY, authorization: 'Basic dXBzdHJlYW06Y3JlZHM=' } });
    const welcome = await new Promise<string>((resolve, reject) => {
      ws.once('message', (data) => resolve(String(data)));
      ws.once('error', reject);
      ws.once('unexpected-response', (_req, res) => reject(new Error(`HTTP ${res.statusCode}`)));
    });
    ws.close();
    assert.equal(welcome, 'welcome');
    const h = handshakes.at(-1)!;
    assert.equal(h['x-api-key'], undefined);
    assert.equal(h.authorization, undefined);
    assert.equal(h['x-team'], 'payments');
    assert.equal(h['x-sees-credential'], 'no');
  });

  it('accepts a key from `x-api-key`; both credential headers are withheld from the upstream (ADR 0015)', async () => {
    assert.equal((await call('/strict', { 'x-api-key': TEAM_KEY, authorization: 'Basic dXBzdHJlYW06Y3JlZHM=' })).status, 200);
    assert.equal(seen()['x-api-key'], undefined);
    assert.equal(seen().authorization, undefined, 'Authorization is a header apiKey reads: only backendAuth.passthrough forwards it');
    assert.equal(seen()['x-team'], 'payments');
  });

  it('a key without metadata has apiKey.key only; keys may come from ${VAR}', async () => {
    assert.equal((await call('/strict', { 'x-api-key': BOT_KEY })).status, 200);
    assert.equal(seen()['x-team'], undefined, 'a missing metadata field makes the CEL expression fail: header not set');
    assert.equal(seen()['x-key-is-team'], 'false');
    assert.equal((await call('/strict', { 'x-api-key': ENV_KEY })).status, 200);
    assert.equal(seen()['x-team'], 'env');
  });

  it('a wrong key is 401 in strict and optional mode, whichever header carries it; prefixes and extensions fail', async () => {
    for (const path of ['/strict', '/optional']) {
      assertRejected(await call(path, { 'x-api-key': 'sk-wrong' }), 'invalid credentials');
      assertRejected(await call(path, { authorization: 'Bearer sk-wrong' }), 'invalid credentials');
      assertRejected(await call(path, { 'x-api-key': TEAM_KEY.slice(0, -1) }), 'invalid credentials');
      assertRejected(await call(path, { 'x-api-key': `${TEAM_KEY}0` }), 'invalid credentials');
    }
    assert.equal(upstream.received.filter((r) => r.headers['x-api-key'] === 'sk-wrong').length, 0, 'rejected requests never reach the upstream');
  });

  it('a missing key: strict 401, optional and permissive pass without the attribute', async () => {
    assertRejected(await call('/strict'), 'no API Key found');
    assertRejected(await call('/strict', { authorization: 'Basic YTpi' }), 'no API Key found');
    assert.equal((await call('/optional')).status, 200);
    assert.equal(seen()['x-team'], undefined);
    assert.equal((await call('/permissive')).status, 200);
  });

  it('permissive: a wrong key passes without the attribute (and is withheld); a right one is still accepted', async () => {
    assert.equal((await call('/permissive', { 'x-api-key': 'sk-wrong' })).status, 200);
    assert.equal(seen()['x-api-key'], undefined);
    assert.equal(seen()['x-team'], undefined);
    assert.equal((await call('/permissive', { 'x-api-key': TEAM_KEY })).status, 200);
    assert.equal(seen()['x-team'], 'payments');
    assert.equal(seen()['x-api-key'], undefined);
  });

  it('keys appear neither in logs nor in /config_dump', async () => {
    const dump = await (await request(`${gw.adminUrl}/config_dump`)).body.text();
    assert.match(dump, /apiKey/);
    assert.match(dump, /payments/, 'metadata is not secret');
    for (const key of [TEAM_KEY, BOT_KEY, ENV_KEY]) {
      assert.ok(!dump.includes(key), 'config_dump holds no key');
      assert.ok(!gw.logs.some((l) => l.includes(key)), 'logs hold no key');
    }
  });

  it('1,000 keys: each is found by its digest with its own metadata; a near miss is refused', async () => {
    const manyPort = await freePort();
    const secret = (i: number): string => `sk-many-${String(i).padStart(4, '0')}-5b0e2c71`;
    const keys = Array.from({ length: 1000 }, (_, i) => ({ key: secret(i), metadata: { n: i } }));
    const many = await startGateway(
      {
        binds: [{ port: manyPort, listeners: [{ routes: [{ policies: { apiKey: { keys, mode: 'strict' }, transformations: { request: { set: { 'x-n': 'string(apiKey.n)' } } } }, backends: [{ host: `127.0.0.1:${upstream.port}` }] }] }] }],
      },
      { preset: PRESET },
    );
    try {
      for (const i of [0, 1, 498, 999]) {
        const res = await request(`${many.url(manyPort)}/`, { headers: { 'x-api-key': secret(i) } });
        await res.body.text();
        assert.equal(res.statusCode, 200);
        assert.equal(seen()['x-n'], String(i));
      }
      const near = await request(`${many.url(manyPort)}/`, { headers: { 'x-api-key': `${secret(7).slice(0, -1)}0` } });
      assert.equal(near.statusCode, 401, await near.body.text());
    } finally {
      await many.stop();
    }
  });

  it('a key no client can present is a config error at its place: characters past ASCII, controls, surrounding blanks', async () => {
    // Header values arrive as bytes read one per character: a configured `sk-clé` never matched the bytes a client
    // sends for it, and a trailing blank (an env file's) never matched a trimmed header: keys that could not work.
    const text = (key: string) => stringify({ binds: [{ port, listeners: [{ routes: [{ policies: { apiKey: { keys: [{ key: TEAM_KEY }, { key }] } }, backends: [{ host: '127.0.0.1:1' }] }] }] }] });
    for (const key of ['sk-clé-4f9a1c7e2b8d', 'sk-tab\tinside-0001', 'sk-trailing-blank-0002 ', ' sk-leading-0003']) {
      await assert.rejects(gw.gateway.compile(text(key)), (err: Error) => {
        assert.match(err.message, /a key must be printable ASCII without blanks at either end .*apiKey\.keys\[1\]\.key/);
        assert.doesNotMatch(err.message, /sk-(cl|tab|trail|lead)/, 'the key is not echoed');
        return true;
      }, JSON.stringify(key));
    }
    // A blank inside is a character a client can send.
    await gw.gateway.compile(text('sk-inner space-0003'));
  });

  it('two equal keys are a config error naming the second one, without echoing the key', async () => {
    const text = stringify({
      binds: [{ port, listeners: [{ routes: [{ policies: { apiKey: { keys: [{ key: TEAM_KEY }, { key: TEAM_KEY }] } }, backends: [{ host: '127.0.0.1:1' }] }] }] }],
    });
    await assert.rejects(gw.gateway.compile(text), (err: Error) => {
      assert.match(err.message, /this key is the same as `keys\[0\]`/);
      assert.match(err.message, /apiKey\.keys\[1\]\.key/);
      return true;
    });
  });
});
