// Issue 12 item 4: who can reach the admin UI and how its endpoints are bounded, over real HTTP (no browser).
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { startUpstream } from '../helpers/upstream.ts';
import { makeTestPki } from '../helpers/pki.ts';
import type { TestPki } from '../helpers/pki.ts';
import type { TestUpstream } from '../helpers/upstream.ts';

const PASSWORD = 'correct-horse-battery';
const KEY = 'ui-key-0123456789abcdef';

const hello = (port: number): Record<string, unknown> => ({
  port,
  listeners: [{ routes: [{ name: 'hello', matches: [{ path: { exact: '/hello' } }], policies: { directResponse: { status: 200, body: 'hi\n' } } }] }],
});

/** Open a server-sent-events stream; resolves with its status once the head arrives (the stream stays open). */
function openStream(url: string): Promise<{ status: number; close: () => void; received: () => string }> {
  return new Promise((resolve, reject) => {
    let text = '';
    const req = httpRequest(url, (res) => {
      res.setEncoding('utf8').on('data', (d: string) => (text += d));
      res.on('error', () => undefined);
      resolve({ status: res.statusCode!, close: () => req.destroy(), received: () => text });
    });
    req.on('error', reject);
    req.end();
  });
}

describe('admin UI on loopback (the default)', () => {
  let gw: RunningGateway;
  let port: number;
  before(async () => {
    port = await freePort();
    gw = await startGateway({ binds: [hello(port)] });
  });
  after(() => gw.stop());

  it('serves the page with its own scripts only (works offline), and / redirects to it', async () => {
    const res = await fetch(`${gw.adminUrl}/ui/`);
    assert.equal(res.status, 200);
    const csp = res.headers.get('content-security-policy') ?? '';
    assert.match(csp, /script-src 'self'/);
    const html = await res.text();
    assert.doesNotMatch(html, /https?:\/\//, 'no CDN or external resource');
    for (const asset of ['/ui/app.js', '/ui/charts.js', '/ui/app.css']) {
      const a = await fetch(`${gw.adminUrl}${asset}`);
      assert.equal(a.status, 200, asset);
      assert.doesNotMatch(await a.text(), /https?:\/\/(?!www\.w3\.org)/, `${asset} loads nothing from elsewhere`);
    }
    const root = await fetch(`${gw.adminUrl}/`, { redirect: 'manual' });
    assert.equal(root.status, 302);
    assert.equal(root.headers.get('location'), '/ui/');
  });

  it('the live tail takes at most 4 browsers; a fifth gets 429, and a place frees when one leaves', async () => {
    const streams = [];
    for (let i = 0; i < 4; i++) streams.push(await openStream(`${gw.adminUrl}/ui/api/tail`));
    assert.deepEqual(streams.map((s) => s.status), [200, 200, 200, 200]);
    const fifth = await openStream(`${gw.adminUrl}/ui/api/tail`);
    assert.equal(fifth.status, 429);
    fifth.close();
    await fetch(`${gw.url(port)}/hello?access_token=s3cr3t-tail-value`, { headers: { authorization: 'Bearer s3cr3t-header-value' } });
    await new Promise((r) => setTimeout(r, 600));
    assert.match(streams[0]!.received(), /"route":"hello"/);
    // The tail shows the access log's fields: credentials in the query replaced, no headers.
    assert.match(streams[0]!.received(), /access_token=<redacted>/);
    assert.doesNotMatch(streams[0]!.received(), /s3cr3t/);
    streams.shift()!.close();
    await new Promise((r) => setTimeout(r, 100));
    const again = await openStream(`${gw.adminUrl}/ui/api/tail`);
    assert.equal(again.status, 200);
    again.close();
    for (const s of streams) s.close();
  });

  it('a burst beyond one batch is dropped and counted, never queued', async () => {
    const stream = await openStream(`${gw.adminUrl}/ui/api/tail`);
    await Promise.all(Array.from({ length: 400 }, () => fetch(`${gw.url(port)}/hello`).then((r) => r.arrayBuffer())));
    await new Promise((r) => setTimeout(r, 1200));
    stream.close();
    const text = stream.received();
    const shown = [...text.matchAll(/"route":"hello"/g)].length;
    const dropped = [...text.matchAll(/event: dropped\ndata: (\d+)/g)].reduce((n, m) => n + Number(m[1]), 0);
    assert.equal(shown + dropped, 400, `${shown} shown + ${dropped} dropped`);
  });

  it('the playgrounds reach only the live config\'s binds; POST bodies must be JSON (no cross-site form)', async () => {
    const other = await freePort();
    const res = await fetch(`${gw.adminUrl}/ui/api/call`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ port: other, path: '/', method: 'GET' }) });
    assert.equal(res.status, 400);
    assert.match(await res.text(), /not a bind of the live config/);
    const ok = await fetch(`${gw.adminUrl}/ui/api/call`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ port, path: '/hello', method: 'GET' }) });
    assert.equal(ok.status, 200);
    assert.equal(await ok.text(), 'hi\n');
    const form = await fetch(`${gw.adminUrl}/ui/api/validate`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'text=binds' });
    assert.equal(form.status, 415);
  });

  it('validations run one at a time, at most 5 running or waiting: a sixth gets 429 before its body is read', async () => {
    // Five uploads still sending their bodies hold the five places.
    const text = JSON.stringify({ text: 'binds: []\n' });
    const held = Array.from({ length: 5 }, () => {
      const req = httpRequest(`${gw.adminUrl}/ui/api/validate`, { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': String(text.length) } });
      const answer = new Promise<{ status: number; body: string }>((resolve, reject) => {
        req.on('response', (res) => {
          let body = '';
          res.setEncoding('utf8').on('data', (d: string) => (body += d));
          res.on('end', () => resolve({ status: res.statusCode!, body }));
        });
        req.on('error', reject);
      });
      req.write(text.slice(0, 5));
      return { req, answer };
    });
    await new Promise((r) => setTimeout(r, 300));
    const sixth = await fetch(`${gw.adminUrl}/ui/api/validate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: text });
    assert.equal(sixth.status, 429);
    assert.equal(sixth.headers.get('retry-after'), '1');
    assert.match(((await sixth.json()) as { error: { message: string } }).error.message, /5 validations are running or waiting/);
    for (const h of held) h.req.end(text.slice(5));
    for (const h of held) {
      const { status, body } = await h.answer;
      assert.equal(status, 200);
      assert.equal(JSON.parse(body).ok, true);
    }
    // The places are free again.
    assert.equal((await fetch(`${gw.adminUrl}/ui/api/validate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: text })).status, 200);
  });

  it('an upload that stalls is ended after 10 s (408), so stalled uploads cannot hold the validations\' places', async () => {
    const text = JSON.stringify({ text: 'binds: []\n' });
    const stalled = Array.from({ length: 5 }, () => {
      const req = httpRequest(`${gw.adminUrl}/ui/api/validate`, { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': String(text.length) } });
      const status = new Promise<number | string>((resolve) => {
        req.on('response', (res) => {
          res.resume();
          resolve(res.statusCode!);
        });
        req.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? 'error'));
      });
      req.write(text.slice(0, 5));
      return status;
    });
    await new Promise((r) => setTimeout(r, 300));
    assert.equal((await fetch(`${gw.adminUrl}/ui/api/validate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: text })).status, 429);
    const started = Date.now();
    assert.deepEqual(await Promise.all(stalled), Array(5).fill(408));
    assert.ok(Date.now() - started < 14_000, `ended after ${Date.now() - started} ms`);
    assert.equal((await fetch(`${gw.adminUrl}/ui/api/validate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: text })).status, 200);
  });
});

describe('admin UI playgrounds reach routes behind a listener hostname or TLS', () => {
  let gw: RunningGateway;
  let pki: TestPki;
  let plain: number;
  let secure: number;
  let pinned: number;
  let unnamed: number;
  before(async () => {
    [plain, secure, pinned, unnamed] = [await freePort(), await freePort(), await freePort(), await freePort()];
    pki = makeTestPki({ serverName: 'secure.example.com', serverAltNames: ['DNS:secure.example.com'], label: 'ui-call' });
    const reply = (body: string) => [{ policies: { directResponse: { status: 200, body } } }];
    gw = await startGateway({
      binds: [
        { port: plain, listeners: [{ name: 'api', hostname: 'api.example.com', routes: reply('api') }, { name: 'other', routes: reply('other') }] },
        { port: secure, listeners: [{ name: 'secure', hostname: 'secure.example.com', protocol: 'HTTPS', tls: { cert: pki.serverCert, key: pki.serverKey }, routes: reply('secure') }] },
        // Another loopback address stands in for an interface address (10.0.0.5 in production).
        { port: pinned, address: '127.0.0.2', listeners: [{ routes: reply('pinned') }] },
        { port: unnamed, listeners: [{ hostname: 'a.example.com', routes: reply('a') }, { hostname: 'b.example.com', routes: reply('b') }] },
      ],
    });
  });
  after(async () => {
    await gw.stop();
    pki.remove();
  });
  const call = (body: Record<string, unknown>): Promise<Response> =>
    fetch(`${gw.adminUrl}/ui/api/call`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ path: '/', method: 'GET', ...body }) });

  it('the chosen listener\'s hostname is sent as Host', async () => {
    assert.equal(await (await call({ port: plain })).text(), 'other');
    const api = await call({ port: plain, listener: 'api' });
    assert.equal(api.status, 200);
    assert.equal(await api.text(), 'api');
    assert.equal((await call({ port: plain, listener: 'nope' })).status, 400);
  });

  it('a listener without a name is chosen by its position in the bind (its hostname sent as Host)', async () => {
    // The UI had no way to name it: the call went out with the bind's address as Host, which no listener serves.
    for (const [index, body] of [[0, 'a'], [1, 'b']] as const) {
      const res = await call({ port: unnamed, listener: index });
      assert.equal(res.status, 200, `listener ${index}`);
      assert.equal(await res.text(), body);
    }
    assert.equal((await call({ port: unnamed, listener: 2 })).status, 400);
    assert.equal((await call({ port: unnamed, listener: -1 })).status, 400);
  });

  it('a bind on a specific address is called there, not on 127.0.0.1 (where another process may listen)', async () => {
    const res = await call({ port: pinned });
    assert.equal(res.status, 200);
    assert.equal(await res.text(), 'pinned');
  });

  it('an HTTPS listener is called over TLS (the gateway\'s own certificate, on loopback)', async () => {
    const res = await call({ port: secure, listener: 'secure' });
    assert.equal(res.status, 200);
    assert.equal(await res.text(), 'secure');
  });
});

describe('admin UI validation does not read the gateway\'s environment', () => {
  const SECRET = 'sk-live-env-secret-0123456789';
  let gw: RunningGateway;
  let port: number;
  let listener: TestUpstream;
  before(async () => {
    port = await freePort();
    listener = await startUpstream();
    // The live config uses the variable, as a real one uses OPENAI_API_KEY.
    const keyed = { ...hello(port), listeners: [{ routes: [{ name: 'keyed', policies: { apiKey: { keys: [{ key: '${SWY_UI_TEST_SECRET}' }] }, directResponse: { status: 200 } } }] }] };
    gw = await startGateway({ binds: [keyed] }, { env: { ...process.env, SWY_UI_TEST_SECRET: SECRET } });
  });
  after(async () => {
    await gw.stop();
    await listener.close();
  });
  const validate = async (text: string): Promise<{ ok: boolean; errors?: { code: string; message: string }[] }> => {
    const res = await fetch(`${gw.adminUrl}/ui/api/validate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text }) });
    assert.equal(res.status, 200);
    return (await res.json()) as { ok: boolean; errors?: { code: string; message: string }[] };
  };

  it('a pasted config cannot send an environment variable elsewhere (a JWKS URL fetched while compiling)', async () => {
    const jwks = (url: string): string => `binds:\n- port: ${port}\n  listeners:\n  - routes:\n    - policies:\n        jwtAuth:\n          issuer: x\n          jwks: { url: "${url}" }\n`;
    const answer = await validate(jwks(`http://127.0.0.1:${listener.port}/jwks/\${SWY_UI_TEST_SECRET}`));
    await new Promise((r) => setTimeout(r, 500));
    assert.deepEqual(listener.received.filter((r) => r.url.includes(SECRET)), [], 'the secret reached the listener');
    assert.equal(answer.ok, false);
    assert.equal(answer.errors![0]!.code, 'SWY_ERR_CONFIG_ENV');
    assert.equal((answer.errors![0] as unknown as { file: string }).file, '(pasted config)', 'not the live config file');
    assert.match(answer.errors![0]!.message, /`SWY_UI_TEST_SECRET` is not set.*the admin UI validates without the gateway's environment/s);
    assert.doesNotMatch(JSON.stringify(answer), new RegExp(SECRET));
    // A default still applies.
    assert.equal((await validate(jwks(`http://127.0.0.1:${listener.port}/jwks/\${SWY_UI_TEST_SECRET:-none}`))).ok, true);
    // The live gateway still reads its environment.
    assert.equal((await fetch(`${gw.url(port)}/`, { headers: { authorization: `Bearer ${SECRET}` } })).status, 200);
  });

  it('a pasted config\'s secrets are scrubbed from the log only while it compiles (validations do not grow the scrubber)', async () => {
    const pasted = 'pasted-key-7f3a9c1e';
    const answer = await validate(`binds:\n- port: ${port}\n  listeners:\n  - routes:\n    - policies:\n        apiKey: { keys: [{ key: ${pasted} }] }\n        directResponse: { status: 200 }\n`);
    assert.equal(answer.ok, true);
    // A refused reload logs its code frame; the same string there, not a secret of any loaded config, shows as is.
    assert.equal(await gw.gateway.reload(`binds:\n- port: ${port}\n  listeners:\n  - routes:\n    - policies: { directResponse: { status: 9999, body: ${pasted} } }\n`), false);
    for (let i = 0; i < 100 && !gw.logs.some((l) => l.includes('config reload failed')); i++) await new Promise((r) => setTimeout(r, 10));
    const line = gw.logs.find((l) => l.includes('config reload failed'));
    assert.ok(line, gw.logs.slice(-3).join('\n'));
    assert.match(line, new RegExp(pasted));
  });
});

describe('admin UI on a non-loopback admin address', () => {
  const started: RunningGateway[] = [];
  after(() => Promise.all(started.map((g) => g.stop())));
  const start = async (adminUi?: Record<string, unknown>): Promise<RunningGateway> => {
    const gw = await startGateway({ config: { adminAddr: '0.0.0.0:0', ...(adminUi ? { adminUi } : {}) }, binds: [hello(await freePort())] });
    started.push(gw);
    return gw;
  };

  it('without credentials configured, /ui is refused (403) while /config_dump still answers', async () => {
    const gw = await start();
    const res = await fetch(`${gw.adminUrl}/ui/`);
    assert.equal(res.status, 403);
    assert.match(await res.text(), /adminUi\.basicAuth or apiKey/);
    assert.equal((await fetch(`${gw.adminUrl}/ui/api/config`)).status, 403);
    assert.equal((await fetch(`${gw.adminUrl}/config_dump`)).status, 200);
  });

  it('with basicAuth and apiKey: 401 with a basic challenge without them, 200 with either; both redacted in the dump', async () => {
    const gw = await start({ basicAuth: { username: 'ops', password: PASSWORD }, apiKey: KEY });
    const none = await fetch(`${gw.adminUrl}/ui/`);
    assert.equal(none.status, 401);
    assert.match(none.headers.get('www-authenticate') ?? '', /^Basic realm=/);
    const basic = (u: string, p: string): string => `Basic ${Buffer.from(`${u}:${p}`).toString('base64')}`;
    assert.equal((await fetch(`${gw.adminUrl}/ui/`, { headers: { authorization: basic('ops', 'wrong-password-here') } })).status, 401);
    assert.equal((await fetch(`${gw.adminUrl}/ui/`, { headers: { authorization: basic('ops', PASSWORD) } })).status, 200);
    assert.equal((await fetch(`${gw.adminUrl}/ui/api/config`, { headers: { authorization: `Bearer ${KEY}` } })).status, 200);
    assert.equal((await fetch(`${gw.adminUrl}/ui/api/config`, { headers: { 'x-api-key': KEY } })).status, 200);
    assert.equal((await fetch(`${gw.adminUrl}/ui/api/config`, { headers: { 'x-api-key': `${KEY}x` } })).status, 401);
    const dump = await (await fetch(`${gw.adminUrl}/ui/api/config`, { headers: { authorization: `Bearer ${KEY}` } })).text();
    assert.doesNotMatch(dump, new RegExp(`${PASSWORD}|${KEY}`));
  });

  it('adminUi.enabled: false turns /ui off (404)', async () => {
    const gw = await startGateway({ config: { adminUi: { enabled: false } }, binds: [hello(await freePort())] });
    started.push(gw);
    assert.equal((await fetch(`${gw.adminUrl}/ui/`)).status, 404);
  });
});
