// ADR 0191: the `/keys` management API and `switchyard keys` with what an operator mistypes and an attacker sends:
// a key naming a route that takes no keys is refused with a suggestion; revoking a revoked key is done, not an
// error, for the CLI; a key id never reaches another admin endpoint; rotate and revoke racing each other and
// requests leave no working old or lost secret.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { parse, stringify } from 'yaml';
import { keysMain } from '../../kernel/boot/keys-cli.ts';
import { startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';

interface Answer {
  status: number;
  body: { error?: { message: string }; key?: { id: string; revokedAt?: string }; secret?: string };
}

const virtualKeys = { store: { sqlite: { path: ':memory:' } }, teams: [{ name: 'research' }] };
const route = (name: string, keys = true): Record<string, unknown> => ({
  name,
  matches: [{ path: { pathPrefix: `/${name}` } }],
  policies: { ...(keys ? { virtualKeys } : {}), directResponse: { status: 200, body: 'ok' } },
});
const configOf = (port: number, routes: Record<string, unknown>[]): Record<string, unknown> => ({ binds: [{ port, listeners: [{ routes }] }] });

async function cli(argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await keysMain(argv, (s) => (out += s), (s) => (err += s));
  return { code, out, err };
}

describe('the /keys API and `switchyard keys` with hostile and mistaken input', () => {
  let gw: RunningGateway;
  let port: number;
  before(async () => {
    port = await freePort();
    gw = await startGateway(configOf(port, [route('chat'), route('embeddings'), route('open', false)]));
  });
  after(() => gw.stop());

  const api = async (method: string, path: string, body?: unknown): Promise<Answer> => {
    const res = await fetch(`${gw.adminUrl}${path}`, { method, ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }) });
    return { status: res.status, body: (await res.json()) as Answer['body'] };
  };
  const make = async (body: Record<string, unknown> = {}): Promise<{ id: string; secret: string }> => {
    const { status, body: made } = await api('POST', '/keys', body);
    assert.equal(status, 201, JSON.stringify(made));
    return { id: made.key!.id, secret: made.secret! };
  };
  const use = async (secret: string, path = '/chat'): Promise<number> => (await fetch(`${gw.url(port)}${path}`, { headers: { authorization: `Bearer ${secret}` } })).status;

  it('refuses a key naming a route that takes no keys, with the closest name; a key for a real route works', async () => {
    // Before: 201, and the key was refused with 403 on every route.
    const typo = await api('POST', '/keys', { routes: ['chat', 'embedings'] });
    assert.equal(typo.status, 400);
    assert.match(typo.body.error!.message, /route `embedings` has no `virtualKeys` policy in this config \(did you mean `embeddings`\? routes that take keys: `chat`, `embeddings`\)/);
    // A route that exists but reads no keys: a key limited to it could use nothing.
    const open = await api('POST', '/keys', { routes: ['open'] });
    assert.equal(open.status, 400);
    assert.match(open.body.error!.message, /route `open` has no `virtualKeys` policy/);
    const cliTypo = await cli(['create', '--admin', gw.adminUrl, '--route', 'caht']);
    assert.equal(cliTypo.code, 1);
    assert.match(cliTypo.err, /did you mean `chat`\?/);
    const good = await make({ routes: ['chat'] });
    assert.equal(await use(good.secret, '/chat'), 200);
    assert.equal(await use(good.secret, '/embeddings'), 403);
  });

  it('refuses ids that are not ids with 400, and an encoded `/` never reaches another action or endpoint', async () => {
    const { id } = await make();
    for (const path of [`/keys/..%2Fconfig_dump`, `/keys/a%25b`, `/keys/a%20b`, `/keys/${id}%2Frevoke`]) {
      const { status, body } = await api('GET', path);
      assert.equal(status, 400, path);
      assert.match(body.error!.message, /malformed/, path);
    }
    // Before: `/keys/<id>%2Frotate/revoke`... was read as three steps, and `<id>%2Frevoke` as `<id>/revoke`.
    const sneaky = await api('POST', `/keys/${id}%2Frevoke`);
    assert.equal(sneaky.status, 400);
    assert.equal((await api('GET', `/keys/${id}`)).body.key!.revokedAt, undefined, 'not revoked');
    // A raw `..` step (curl --path-as-is): a 400, not a lookup or another endpoint.
    const raw = await new Promise<number>((resolve, reject) => {
      const req = httpRequest({ host: '127.0.0.1', port: Number(new URL(gw.adminUrl).port), path: '/keys/../config_dump', method: 'GET' }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject).end();
    });
    assert.equal(raw, 400);
  });

  it('`switchyard keys` sends an id as one encoded path step and refuses `.` and `..`', async () => {
    const seen: string[] = [];
    const spy = createServer((req, res) => {
      seen.push(`${req.method} ${req.url}`);
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"message":"no key"}}');
    });
    await new Promise<void>((resolve) => spy.listen(0, '127.0.0.1', resolve));
    try {
      const admin = `127.0.0.1:${(spy.address() as AddressInfo).port}`;
      for (const id of ['../config_dump', 'a/b', '50%', '?x=1', '#frag']) assert.equal((await cli(['show', id, '--admin', admin])).code, 1, id);
      assert.equal((await cli(['revoke', '../../reload', '--admin', admin])).code, 1);
      assert.deepEqual(seen, ['GET /keys/..%2Fconfig_dump', 'GET /keys/a%2Fb', 'GET /keys/50%25', 'GET /keys/%3Fx%3D1', 'GET /keys/%23frag', 'POST /keys/..%2F..%2Freload/revoke']);
      for (const id of ['.', '..']) {
        // Before: `keys show ..` asked the admin address's `/` (a URL drops the `..` step).
        const { code, err } = await cli(['show', id, '--admin', admin]);
        assert.equal(code, 2, id);
        assert.match(err, new RegExp(`\`\\${id.split('').join('\\')}\` is not a key id`));
      }
      assert.equal(seen.length, 6, 'nothing asked for `.` or `..`');
    } finally {
      spy.close();
    }
  });

  it('revoking a revoked key exits 0 and says so; rotating it, an unknown key or a declared key exits 1', async () => {
    const { id } = await make();
    const first = await cli(['revoke', id, '--admin', gw.adminUrl]);
    assert.deepEqual([first.code, first.out], [0, `revoked key ${id}\n`]);
    // Before: exit 1, "key ... is revoked".
    const again = await cli(['revoke', id, '--admin', gw.adminUrl]);
    assert.equal(again.code, 0, again.err);
    assert.match(again.out, new RegExp(`^key ${id} was already revoked \\(at \\d{4}-\\d\\d-\\d\\dT`));
    const json = await cli(['revoke', id, '--admin', gw.adminUrl, '--json']);
    assert.equal(json.code, 0);
    assert.equal((JSON.parse(json.out) as Answer['body']).key!.id, id);
    const rotate = await cli(['rotate', id, '--admin', gw.adminUrl]);
    assert.equal(rotate.code, 1);
    assert.match(rotate.err, new RegExp(`key \`${id}\` is revoked since `));
    for (const command of ['show', 'usage', 'rotate', 'revoke']) {
      const unknown = await cli([command, 'vk_nosuchkey', '--admin', gw.adminUrl]);
      assert.deepEqual([unknown.code, unknown.err], [1, 'switchyard: no key `vk_nosuchkey`\n'], command);
    }
    // The API answers a second revoke 409 with the key as it is (its first revocation time).
    const api409 = await api('POST', `/keys/${id}/revoke`);
    assert.equal(api409.status, 409);
    assert.equal(api409.body.key!.revokedAt, (await api('GET', `/keys/${id}`)).body.key!.revokedAt);
  });

  it('rotate and revoke racing on one key: the key ends revoked and no secret of it works', async () => {
    for (let round = 0; round < 10; round++) {
      const { id, secret } = await make();
      const [rotated, ...revokes] = await Promise.all([api('POST', `/keys/${id}/rotate`), api('POST', `/keys/${id}/revoke`), api('DELETE', `/keys/${id}`)]);
      assert.ok([200, 409].includes(rotated.status), JSON.stringify(rotated.body));
      assert.deepEqual(revokes.map((r) => r.status).sort(), [200, 409], JSON.stringify(revokes.map((r) => r.body)));
      for (const r of revokes) assert.equal(typeof r.body.key?.revokedAt, 'string', 'both answers carry the revoked key');
      assert.equal(typeof (await api('GET', `/keys/${id}`)).body.key!.revokedAt, 'string');
      assert.equal(await use(secret), 401);
      if (rotated.status === 200) assert.equal(await use(rotated.body.secret!), 401);
    }
  });

  it('a rotation racing requests with the old secret: once it has answered, the old secret is refused', async () => {
    const { id, secret } = await make();
    let stop = false;
    const statuses: number[] = [];
    const load = (async () => {
      while (!stop) statuses.push(await use(secret));
    })();
    await new Promise((r) => setTimeout(r, 50));
    const rotated = await api('POST', `/keys/${id}/rotate`);
    assert.equal(rotated.status, 200);
    assert.equal(await use(secret), 401);
    assert.equal(await use(rotated.body.secret!), 200);
    stop = true;
    await load;
    assert.ok(statuses.every((s) => s === 200 || s === 401), statuses.join());
  });

  it('a route added by a reload takes keys made after it; hostile list queries are refused or bounded', async () => {
    assert.equal((await api('POST', '/keys', { routes: ['batch'] })).status, 400);
    const config = parse(readFileSync(gw.file, 'utf8')) as Record<string, unknown>;
    writeFileSync(gw.file, stringify({ ...config, ...configOf(port, [route('chat'), route('embeddings'), route('open', false), route('batch')]) }));
    assert.equal(await gw.gateway.reload(), true);
    const made = await make({ routes: ['batch'] });
    assert.equal(await use(made.secret, '/batch'), 200);
    for (const q of ['limit=99999999999999999999', 'limit=1e3', 'limit=', 'limit=%00']) assert.equal((await api('GET', `/keys?${q}`)).status, 400, q);
    // A mistyped team: 400 with the closest name, as when a key is made (it listed nothing, exit 0).
    const typo = await cli(['list', '--team', 'reserch', '--admin', gw.adminUrl]);
    assert.equal(typo.code, 1);
    assert.match(typo.err, /team `reserch` is not declared under `virtualKeys.teams` \(did you mean `research`\?/);
    const declared = await cli(['list', '--team', 'research', '--admin', gw.adminUrl]);
    assert.deepEqual([declared.code, declared.out.split('\n')[0]!.startsWith('ID')], [0, true]);
    const odd = await api('GET', `/keys?cursor=${'z'.repeat(4000)}&limit=1000&limit=5000&foo=bar`);
    assert.deepEqual([odd.status, (odd.body as { keys?: unknown[] }).keys], [200, []]);
    assert.equal((await api('GET', `/keys?team=${'x'.repeat(4000)}`)).status, 400);
  });

  it('a page of the largest keys a create takes ends at about 4 MiB, and `keys list` still prints every key', async () => {
    // Before: 1,000 such keys were one 35 MB page (and 400 MB of memory to answer it).
    const metadata = Object.fromEntries(Array.from({ length: 380 }, (_, i) => [`k${i}`, i]));
    const body = { owner: 'o'.repeat(256), name: 'n'.repeat(256), models: Array.from({ length: 100 }, (_, j) => `m${j}-`.padEnd(256, 'x')), metadata };
    for (let i = 0; i < 160; i++) await make(body);
    const res = await fetch(`${gw.adminUrl}/keys`);
    const text = await res.text();
    const page = JSON.parse(text) as { keys: unknown[]; total: number; next?: string };
    assert.ok(page.keys.length < 160 && typeof page.next === 'string', `${page.keys.length} keys, next ${page.next}`);
    assert.ok(text.length < 6 * 1024 * 1024, `${text.length} bytes`);
    const listed = await cli(['list', '--admin', gw.adminUrl, '--json']);
    assert.equal(listed.code, 0, listed.err);
    const all = JSON.parse(listed.out) as { keys: { id: string }[]; total: number };
    assert.equal(all.keys.length, all.total);
    assert.equal(new Set(all.keys.map((k) => k.id)).size, all.total);
  });
});
