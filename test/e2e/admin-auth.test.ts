// ADR 0136: `config.adminUi` credentials protect every endpoint of the admin address (the `/keys` API that mints
// virtual keys, `/config_dump`, the UI), on any address; `/metrics` and `/healthz/ready` stay open. `switchyard keys`
// sends the key from `--admin-key` or `ADMIN_API_KEY`. Without credentials nothing changes.
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { BLOCK_MS, MAX_FAILURES } from '../../kernel/admin/admin-throttle.ts';
import { keysMain } from '../../kernel/boot/keys-cli.ts';
import { aiPreset, aiRoute } from '../ai/harness.ts';
import { compileError, headlines, yaml } from '../config/helpers.ts';
import { startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';

const PASSWORD = 'correct-horse-battery';
const KEY = 'admin-key-0123456789abcdef';
const basic = (u: string, p: string): string => `Basic ${Buffer.from(`${u}:${p}`).toString('base64')}`;

async function keysGateway(config: Record<string, unknown>): Promise<RunningGateway> {
  const virtualKeys = { store: { sqlite: { path: ':memory:' } } };
  // The provider is never called: only the admin address is used.
  const ai = { name: 'openai', provider: { openAI: {} }, hostOverride: '127.0.0.1:9' };
  return startGateway({ config, binds: [{ port: await freePort(), listeners: [{ routes: [aiRoute('/openai', ai, { virtualKeys })] }] }] }, { preset: aiPreset });
}

/** Run `switchyard keys ...` in process with ADMIN_API_KEY as given; its exit code and everything it printed. */
async function cli(argv: string[], envKey?: string): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const saved = process.env.ADMIN_API_KEY;
  if (envKey === undefined) delete process.env.ADMIN_API_KEY;
  else process.env.ADMIN_API_KEY = envKey;
  try {
    const code = await keysMain(argv, (s) => out.push(s), (s) => err.push(s));
    return { code, out: out.join(''), err: err.join('') };
  } finally {
    if (saved === undefined) delete process.env.ADMIN_API_KEY;
    else process.env.ADMIN_API_KEY = saved;
  }
}

describe('admin credentials on a non-loopback admin address', () => {
  let gw: RunningGateway;
  before(async () => {
    gw = await keysGateway({ adminAddr: '0.0.0.0:0', adminUi: { basicAuth: { username: 'ops', password: PASSWORD }, apiKey: KEY } });
  });
  after(() => gw.stop());

  it('/keys, /config_dump and every other admin path answer 401 without them', async () => {
    const create = await fetch(`${gw.adminUrl}/keys`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ owner: 'mallory@example.com' }) });
    assert.equal(create.status, 401);
    const body = (await create.json()) as { error: { message: string } };
    assert.match(body.error.message, /credentials/);
    assert.match(create.headers.get('www-authenticate') ?? '', /^Basic realm=/);
    for (const [method, path] of [['GET', '/keys'], ['GET', '/keys/vk_x'], ['POST', '/keys/vk_x/rotate'], ['POST', '/keys/vk_x/revoke'], ['DELETE', '/keys/vk_x'], ['GET', '/config_dump'], ['GET', '/nope'], ['GET', '/']] as const) {
      assert.equal((await fetch(`${gw.adminUrl}${path}`, { method, redirect: 'manual' })).status, 401, `${method} ${path}`);
    }
    assert.equal((await fetch(`${gw.adminUrl}/keys`, { headers: { authorization: `Bearer ${KEY}x` } })).status, 401, 'a wrong key');
    assert.equal((await fetch(`${gw.adminUrl}/keys`, { headers: { authorization: basic('ops', 'wrong-password-here') } })).status, 401, 'a wrong password');
    assert.equal((await fetch(`${gw.adminUrl}/keys`, { headers: { authorization: basic('root', PASSWORD) } })).status, 401, 'a wrong user');
  });

  it('with the key (Bearer or x-api-key) or the basic credentials, they work', async () => {
    const create = await fetch(`${gw.adminUrl}/keys`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}` }, body: JSON.stringify({ owner: 'ana@example.com' }) });
    assert.equal(create.status, 201);
    const { key } = (await create.json()) as { key: { id: string } };
    const list = await fetch(`${gw.adminUrl}/keys`, { headers: { authorization: basic('ops', PASSWORD) } });
    assert.equal(list.status, 200);
    assert.ok(JSON.stringify(await list.json()).includes(key.id));
    assert.equal((await fetch(`${gw.adminUrl}/keys/${key.id}/revoke`, { method: 'POST', headers: { 'x-api-key': KEY } })).status, 200);
    const dump = await fetch(`${gw.adminUrl}/config_dump`, { headers: { 'x-api-key': KEY } });
    assert.equal(dump.status, 200);
    assert.doesNotMatch(await dump.text(), new RegExp(`${PASSWORD}|${KEY}`));
    assert.equal((await fetch(`${gw.adminUrl}/ui/`, { headers: { authorization: basic('ops', PASSWORD) } })).status, 200);
  });

  it('no start warning: the address has credentials', () => {
    assert.ok(!gw.logs.some((l) => /without credentials/.test(l)), gw.logs.join('\n'));
  });

  it('/metrics and /healthz/ready on their own addresses need none', async () => {
    assert.equal((await fetch(`${gw.statsUrl}/metrics`)).status, 200);
    assert.equal((await fetch(`${gw.readinessUrl}/healthz/ready`)).status, 200);
  });

  it('`switchyard keys` sends --admin-key or ADMIN_API_KEY, never prints it, and says what is missing without it', async () => {
    const none = await cli(['list', '--admin', gw.adminUrl]);
    assert.equal(none.code, 1);
    assert.match(none.err, /needs credentials.*ADMIN_API_KEY/);
    const wrong = await cli(['list', '--admin', gw.adminUrl, '--admin-key', `${KEY}-wrong`]);
    assert.equal(wrong.code, 1);
    assert.match(wrong.err, /refused the admin key/);
    assert.ok(!wrong.err.includes(KEY), 'the key is not echoed');
    const flag = await cli(['create', '--owner', 'bo@example.com', '--admin', gw.adminUrl, '--admin-key', KEY]);
    assert.equal(flag.code, 0, flag.err);
    assert.match(flag.out, /created key vk_/);
    const env = await cli(['list', '--admin', gw.adminUrl], KEY);
    assert.equal(env.code, 0, env.err);
    assert.match(env.out, /bo@example\.com/);
    assert.ok(!(flag.out + flag.err + env.out + env.err).includes(KEY), 'the key is never printed');
  });
});

describe('admin credentials on a loopback admin address, and no credentials', () => {
  const started: RunningGateway[] = [];
  after(() => Promise.all(started.map((g) => g.stop())));

  it('apply there too: a local user cannot mint keys without them', async () => {
    const gw = await keysGateway({ adminAddr: '127.0.0.1:0', adminUi: { apiKey: KEY } });
    started.push(gw);
    const res = await fetch(`${gw.adminUrl}/keys`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    assert.equal(res.status, 401);
    assert.match(res.headers.get('www-authenticate') ?? '', /^Bearer realm=/, 'a key-only config challenges for a bearer token');
    assert.equal((await fetch(`${gw.adminUrl}/keys`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}` }, body: '{}' })).status, 201);
  });

  it('/metrics and /healthz/ready on the admin address itself stay open; its own endpoints do not', async () => {
    const gw = await keysGateway({ adminAddr: '127.0.0.1:0', statsAddr: '127.0.0.1:0', readinessAddr: '127.0.0.1:0', adminUi: { apiKey: KEY } });
    started.push(gw);
    assert.equal(gw.statsUrl, gw.adminUrl, 'one server for the three roles');
    assert.equal((await fetch(`${gw.adminUrl}/metrics`)).status, 200);
    assert.equal((await fetch(`${gw.adminUrl}/healthz/ready`)).status, 200);
    assert.equal((await fetch(`${gw.adminUrl}/config_dump`)).status, 401);
    assert.equal((await fetch(`${gw.adminUrl}/keys`)).status, 401);
  });

  it('a non-loopback admin address without credentials still serves /keys, and says so in a start warning', async () => {
    const gw = await keysGateway({ adminAddr: '0.0.0.0:0' });
    started.push(gw);
    assert.equal((await fetch(`${gw.adminUrl}/keys`)).status, 200);
    const warning = gw.logs.find((l) => /WARN/.test(l) && /without credentials/.test(l));
    assert.ok(warning, gw.logs.join('\n'));
    assert.match(warning, /config\.adminUi\.apiKey/);
    const loopback = await keysGateway({ adminAddr: '127.0.0.1:0' });
    started.push(loopback);
    assert.ok(!loopback.logs.some((l) => /without credentials/.test(l)), 'none on loopback');
  });

  it('all of 127.0.0.0/8 is loopback: /ui without credentials on 127.0.0.2, and no warning', async () => {
    const gw = await keysGateway({ adminAddr: '127.0.0.2:0' });
    started.push(gw);
    const admin = `http://127.0.0.2:${gw.gateway.admin.address('admin')!.port}`;
    assert.equal((await fetch(`${admin}/ui/`)).status, 200);
    assert.ok(!gw.logs.some((l) => /without credentials/.test(l)), gw.logs.join('\n'));
  });

  it('without credentials nothing changes: /keys and /config_dump answer, and the CLI needs no key', async () => {
    const gw = await keysGateway({ adminAddr: '127.0.0.1:0' });
    started.push(gw);
    assert.equal((await fetch(`${gw.adminUrl}/keys`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })).status, 201);
    assert.equal((await fetch(`${gw.adminUrl}/config_dump`)).status, 200);
    const run = await cli(['list', '--admin', gw.adminUrl]);
    assert.equal(run.code, 0, run.err);
  });
});

/** A GET from a chosen local address (the throttle counts per client address). */
function getFrom(localAddress: string, url: string, headers: Record<string, string> = {}): Promise<{ status: number; retryAfter?: string; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { localAddress, headers }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (c: string) => (body += c)).on('end', () => resolve({ status: res.statusCode!, retryAfter: res.headers['retry-after'], body }));
    });
    req.on('error', reject).end();
  });
}

describe('failed admin credentials are throttled per client address (ADR 0160)', () => {
  let gw: RunningGateway;
  before(async () => {
    gw = await keysGateway({ adminAddr: '0.0.0.0:0', statsAddr: '0.0.0.0:0', adminUi: { apiKey: KEY } });
  });
  after(() => gw.stop());

  it(`after ${MAX_FAILURES} wrong credentials from one address it gets 429 with Retry-After, even with the right key, logged once`, async () => {
    const url = `http://127.0.0.3:${gw.gateway.admin.address('admin')!.port}`;
    for (let i = 0; i < 3; i++) assert.equal((await getFrom('127.0.0.3', `${url}/config_dump`)).status, 401, 'no credential: not a guess');
    for (let i = 0; i < MAX_FAILURES; i++) {
      const wrong = await getFrom('127.0.0.3', `${url}/keys`, i % 2 ? { 'x-api-key': `guess-${i}` } : { authorization: `Bearer guess-${i}` });
      assert.equal(wrong.status, 401, `guess ${i + 1}`);
    }
    for (const headers of [{ authorization: `Bearer ${KEY}` }, { authorization: 'Bearer another-guess' }, {} as Record<string, string>]) {
      const refused = await getFrom('127.0.0.3', `${url}/keys`, headers);
      assert.equal(refused.status, 429, JSON.stringify(headers));
      const seconds = Number(refused.retryAfter);
      assert.ok(seconds > 0 && seconds <= BLOCK_MS / 1000, refused.retryAfter);
      assert.match(JSON.parse(refused.body).error.message, /too many failed admin credentials/);
    }
    assert.equal((await getFrom('127.0.0.3', `${url}/ui/`)).status, 429, 'the UI too');
    assert.equal((await getFrom('127.0.0.3', `http://127.0.0.3:${gw.gateway.admin.address('stats')!.port}/metrics`)).status, 200, '/metrics stays open');
    const lines = gw.logs.filter((l) => /failed too often/.test(l));
    assert.equal(lines.length, 1, gw.logs.join('\n'));
    assert.match(lines[0]!, /127\.0\.0\.3/);
    assert.ok(!gw.logs.some((l) => l.includes('guess-')), 'the guesses are never logged');
  });

  it('other addresses are not refused for it, and a right credential clears an address\'s count', async () => {
    const port = gw.gateway.admin.address('admin')!.port;
    assert.equal((await getFrom('127.0.0.4', `http://127.0.0.4:${port}/keys`, { authorization: `Bearer ${KEY}` })).status, 200);
    for (let round = 0; round < 2; round++) {
      for (let i = 0; i < MAX_FAILURES - 1; i++) assert.equal((await getFrom('127.0.0.5', `http://127.0.0.5:${port}/keys`, { 'x-api-key': 'nope' })).status, 401);
      assert.equal((await getFrom('127.0.0.5', `http://127.0.0.5:${port}/keys`, { 'x-api-key': KEY })).status, 200, `round ${round}`);
    }
  });
});

describe('admin credentials no client could send', () => {
  it('are config errors: an apiKey with a space or a non-ASCII character, a basic user name with a colon', async () => {
    const config = (adminUi: string): string => yaml('config:', `  adminUi: ${adminUi}`, 'binds: []');
    for (const [adminUi, path] of [
      ['{ apiKey: "admin key 0123456789abcdef" }', 'config.adminUi.apiKey'],
      ['{ apiKey: "admin-key-0123456789abcdéf" }', 'config.adminUi.apiKey'],
      ['{ basicAuth: { username: "ops:root", password: "correct-horse-battery" } }', 'config.adminUi.basicAuth.username'],
    ]) {
      const err = await compileError(config(adminUi!));
      assert.match(headlines(err).join('\n'), new RegExp(`\\(at ${path!.replace(/\./g, '\\.')}\\)`), adminUi);
      assert.doesNotMatch(err.message, /0123456789abc/, 'the key is not quoted');
    }
  });
});
