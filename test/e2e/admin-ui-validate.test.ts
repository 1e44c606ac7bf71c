// ADR 0131: what the admin UI's validator (POST /ui/api/validate) may do with a pasted config: read no file it
// names, create no store, connect nowhere, and say what it left unchecked (over real HTTP, no browser).
import assert from 'node:assert/strict';
import { existsSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import type { Server } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { definePolicy, readSharedFile } from 'switchyard/sdk';
import { startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { requestsWhile } from '../helpers/loop-lateness.ts';
import { freePort } from '../helpers/ports.ts';
import { fullPresetWith } from '../helpers/preset.ts';
import { testTempDir } from '../helpers/temp-dir.ts';

interface Issue {
  readonly path: string;
  readonly code: string;
  readonly message: string;
}
interface Answer {
  readonly ok: boolean;
  readonly errors?: Issue[];
  readonly warnings?: Issue[];
}

/** A TCP listener that only counts the connections it gets (a Redis, a JWKS server, a health-checked backend). */
async function countingListener(): Promise<{ port: number; connections: () => number; close: () => Promise<void> }> {
  let n = 0;
  const server: Server = createServer((socket) => {
    n++;
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return { port, connections: () => n, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

const UNCHECKED = 'SWY_ERR_CONFIG_UNCHECKED';
const CONTENT = 'file-content-marker-5c1d';

describe('admin UI validation of a pasted config has no effects outside the answer', () => {
  let gw: RunningGateway;
  let port: number;
  let dir: string;
  before(async () => {
    port = await freePort();
    dir = testTempDir('switchyard-validate-');
    gw = await startGateway({ binds: [{ port, listeners: [{ routes: [{ name: 'hello', policies: { directResponse: { status: 200 } } }] }] }] });
  });
  after(() => gw.stop());

  const validate = async (config: Record<string, unknown>): Promise<Answer> => {
    const res = await fetch(`${gw.adminUrl}/ui/api/validate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text: JSON.stringify(config) }) });
    assert.equal(res.status, 200);
    return (await res.json()) as Answer;
  };
  const route = (policies: Record<string, unknown>, extra: Record<string, unknown> = {}): Record<string, unknown> => ({
    binds: [{ port, listeners: [{ routes: [{ name: 'r', policies, ...extra }] }] }],
  });

  it("checks a declared key's routes against the pasted config though its key store is left unchecked (ADR 0196)", async () => {
    const virtualKeys = { store: { sqlite: { path: join(dir, 'never', 'keys.db') } }, keys: [{ id: 'bot', key: 'sk-bot-0123456789abc', routes: ['rr'] }] };
    const answer = await validate(route({ virtualKeys, directResponse: { status: 200 } }));
    assert.equal(answer.ok, false, JSON.stringify(answer));
    assert.deepEqual(answer.errors!.map((e) => e.path), ['binds[0].listeners[0].routes[0].policies.virtualKeys.keys[0].routes[0]']);
    assert.match(answer.errors![0]!.message, /route `rr` is not a route of this config \(did you mean `r`\?/);
    assert.equal(existsSync(join(dir, 'never')), false);
  });

  it('does not read an htpasswd file the paste names: its user names never show, the file is reported as not checked', async () => {
    const file = join(dir, 'users');
    writeFileSync(file, `admin-${CONTENT}:plaintext-password\n`);
    const answer = await validate(route({ basicAuth: { htpasswd: { file } }, directResponse: { status: 200 } }));
    assert.doesNotMatch(JSON.stringify(answer), new RegExp(CONTENT), 'the answer shows what the file holds');
    assert.equal(answer.ok, true, JSON.stringify(answer));
    assert.deepEqual(
      answer.warnings!.map((w) => [w.code, w.path]),
      [[UNCHECKED, 'binds[0].listeners[0].routes[0].policies.basicAuth.htpasswd.file']],
    );
    assert.match(answer.warnings![0]!.message, /not checked.*switchyard --validate-only/s);
  });

  it('reads none of the other files a config names (keys, certificates, JWKS, catalogs, OpenAPI documents)', async () => {
    const junk = join(dir, 'junk');
    writeFileSync(junk, `${CONTENT}\n`);
    const answer = await validate({
      backends: [{ name: 'tls', host: '127.0.0.1:1', policies: { backendTLS: { root: junk }, backendAuth: { key: { file: junk } } } }],
      binds: [
        {
          port,
          listeners: [
            {
              name: 'secure',
              hostname: 'secure.example.com',
              protocol: 'HTTPS',
              tls: { cert: junk, key: junk },
              routes: [
                { name: 'jwt', matches: [{ path: { pathPrefix: '/jwt' } }], policies: { jwtAuth: { issuer: 'x', jwks: { file: junk } }, directResponse: { status: 200 } } },
                { name: 'tls', matches: [{ path: { pathPrefix: '/tls' } }], backends: [{ backend: 'tls' }] },
                { name: 'llm', matches: [{ path: { pathPrefix: '/llm' } }], backends: [{ ai: { name: 'openai', provider: { openAI: {} }, costs: { catalog: junk } } }] },
                { name: 'mcp', matches: [{ path: { pathPrefix: '/mcp' } }], backends: [{ mcp: { targets: [{ name: 'rest', openapi: { host: '127.0.0.1', port: 1, schema: { file: junk } } }] } }] },
              ],
            },
          ],
        },
      ],
    });
    assert.doesNotMatch(JSON.stringify(answer), new RegExp(CONTENT));
    assert.equal(answer.ok, true, JSON.stringify(answer));
    assert.deepEqual(answer.warnings!.map((w) => w.path).sort(), [
      'backends[0].policies.backendAuth.key.file',
      'backends[0].policies.backendTLS.root',
      'binds[0].listeners[0].routes[0].policies.jwtAuth.jwks.file',
      // The named backend compiles again where a route uses it.
      'binds[0].listeners[0].routes[1].backends[0].policies.backendAuth.key.file',
      'binds[0].listeners[0].routes[1].backends[0].policies.backendTLS.root',
      'binds[0].listeners[0].routes[2].backends[0].ai.costs.catalog',
      'binds[0].listeners[0].routes[3].backends[0].mcp.targets[0].openapi.schema.file',
      'binds[0].listeners[0].tls.cert',
      'binds[0].listeners[0].tls.key',
    ]);
    assert.ok(answer.warnings!.every((w) => w.code === UNCHECKED));
  });

  // The collector's PEM files were read through the live fetches: "cannot read" or "holds no PEM block" told a
  // paster whether a path exists and is readable as the gateway's user.
  it("reads no file of `config.tracing.tls`: the trace collector's root, cert and key are reported as not checked", async () => {
    const junk = join(dir, 'tracing-junk');
    writeFileSync(junk, `${CONTENT}\n`);
    const missing = join(dir, 'no-such-file.pem');
    const answer = await validate({ config: { tracing: { otlpEndpoint: 'https://127.0.0.1:1', tls: { root: junk, cert: junk, key: missing } } }, ...route({ directResponse: { status: 200 } }) });
    assert.doesNotMatch(JSON.stringify(answer), new RegExp(`${CONTENT}|cannot read|no PEM block`));
    assert.equal(answer.ok, true, JSON.stringify(answer));
    assert.deepEqual(answer.warnings!.map((w) => [w.code, w.path]).sort(), [
      [UNCHECKED, 'config.tracing.tls.cert'],
      [UNCHECKED, 'config.tracing.tls.key'],
      [UNCHECKED, 'config.tracing.tls.root'],
    ]);
  });

  it('still reports what it can check without the files (a wrong field next to a file)', async () => {
    const answer = await validate(route({ basicAuth: { htpasswd: { file: join(dir, 'users') }, mode: 'sometimes' }, directResponse: { status: 200 } }));
    assert.equal(answer.ok, false);
    assert.ok(answer.errors!.some((e) => e.path.endsWith('basicAuth.mode')), JSON.stringify(answer));
  });

  it('creates no SQLite key store and connects to no Redis store, JWKS URL, OpenAPI URL or health-checked backend', async () => {
    const listener = await countingListener();
    try {
      const sqlite = join(dir, 'made-by-validation', 'keys.db');
      const at = `127.0.0.1:${listener.port}`;
      const routes = (...list: Record<string, unknown>[]): Record<string, unknown> => ({
        binds: [{ port, listeners: [{ routes: list.map((r, i) => ({ name: `r${i}`, matches: [{ path: { pathPrefix: `/${i}` } }], ...r })) }] }],
      });
      const direct = { directResponse: { status: 200 } };
      // One key store per config: one validation each.
      const stores = [
        await validate(routes({ policies: { virtualKeys: { store: { sqlite: { path: sqlite } } }, ...direct } })),
        await validate(routes({ policies: { virtualKeys: { store: { redis: { url: `redis://${at}` } } }, ...direct } })),
      ];
      const others = await validate(
        routes(
          { policies: { jwtAuth: { issuer: 'x', jwks: { url: `http://${at}/jwks` } }, ...direct } },
          { policies: { healthCheck: { path: '/healthz', interval: '1s' } }, backends: [{ host: at }] },
          { backends: [{ mcp: { targets: [{ name: 'rest', openapi: { host: '127.0.0.1', port: listener.port, schema: { url: `http://${at}/openapi.json` } } }] } }] },
        ),
      );
      await new Promise((r) => setTimeout(r, 300));
      assert.equal(existsSync(join(dir, 'made-by-validation')), false, 'the validation created the key store');
      assert.equal(listener.connections(), 0, 'the validation connected to a store or server the paste names');
      for (const answer of [...stores, others]) assert.equal(answer.ok, true, JSON.stringify(answer));
      for (const answer of stores) assert.deepEqual(answer.warnings!.map((w) => w.path), ['binds[0].listeners[0].routes[0].policies.virtualKeys.store']);
      // No probe is a verdict a reload waits for either: the health check is not a warning.
      assert.deepEqual(others.warnings!.map((w) => w.path), [
        'binds[0].listeners[0].routes[0].policies.jwtAuth.jwks.url',
        'binds[0].listeners[0].routes[2].backends[0].mcp.targets[0].openapi.schema.url',
      ]);
    } finally {
      await listener.close();
    }
  });

  it('answers with the warnings a plugin gives at load, and writes none of them to the gateway\'s log', async () => {
    const team = 'team-never-declared-3e9a';
    const answer = await validate(route({ virtualKeys: { store: { sqlite: { path: ':memory:' } }, keys: [{ id: 'k1', key: 'sk-pasted-key-0123456789', team }] }, directResponse: { status: 200 } }));
    assert.equal(answer.ok, true, JSON.stringify(answer));
    assert.deepEqual(answer.warnings!.map((w) => [w.code, w.path]), [['SWY_WARN_CONFIG', 'binds[0].listeners[0].routes[0].policies.virtualKeys.keys[0].team']]);
    assert.match(answer.warnings![0]!.message, new RegExp(`team \`${team}\` is not declared`));
    assert.deepEqual(gw.logs.filter((l) => l.includes(team)), [], 'a paste wrote to the gateway\'s log');
  });

  it("answers with `tracing.tls.insecure: true`'s warning, and writes it not to the gateway's log", async () => {
    const answer = await validate({ config: { tracing: { otlpEndpoint: 'https://127.0.0.1:1', tls: { insecure: true } } }, ...route({ directResponse: { status: 200 } }) });
    assert.equal(answer.ok, true, JSON.stringify(answer));
    assert.deepEqual(answer.warnings!.map((w) => [w.code, w.path]), [['SWY_WARN_CONFIG', 'config.tracing.tls.insecure']]);
    assert.match(answer.warnings![0]!.message, /turns off all verification of the trace collector's certificate/);
    assert.deepEqual(gw.logs.filter((l) => l.includes('trace collector')), [], "a paste wrote to the gateway's log");
  });

  it('a body over 1 MiB gets 413 with a JSON answer, not a reset connection (the validator and a plugin endpoint)', async () => {
    const big = JSON.stringify({ text: `# ${'x'.repeat(1024 * 1024)}\nbinds: []\n` });
    const validation = await fetch(`${gw.adminUrl}/ui/api/validate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: big });
    assert.equal(validation.status, 413);
    assert.match(((await validation.json()) as { error: { message: string } }).error.message, /body too large/);
    // A plugin's endpoint on the admin address (`/keys` of virtualKeys) the same.
    assert.equal(await gw.gateway.reload(JSON.stringify(route({ virtualKeys: { store: { sqlite: { path: ':memory:' } } }, directResponse: { status: 200 } }))), true);
    const keys = await fetch(`${gw.adminUrl}/keys`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: big });
    assert.equal(keys.status, 413);
    assert.match(((await keys.json()) as { error: { message: string } }).error.message, /body too large/);
  });

  it('says that `config.plugins` is not loaded by the validator', async () => {
    const answer = await validate({ config: { plugins: ['switchyard-plugin-not-installed'] }, ...route({ directResponse: { status: 200 } }) });
    assert.equal(answer.ok, true, JSON.stringify(answer));
    assert.deepEqual(answer.warnings!.map((w) => [w.code, w.path]), [[UNCHECKED, 'config.plugins']]);
    assert.match(answer.warnings![0]!.message, /switchyard-plugin-not-installed/);
  });
});

/** A plugin that reads a file the config names at compile and ignores `ctx.checkOnly` (one written before it). */
const careless = definePolicy<{ file: string }>({
  key: 'carelessReader',
  description: 'Test only: reads `file` at compile and fails with what it holds.',
  schema: { type: 'object', description: 'The file.', properties: { file: { type: 'string', description: 'A file.' } }, required: ['file'], additionalProperties: false },
  attach: ['routePolicies'],
  phase: 'mutate',
  order: 50,
  async compile(config, ctx) {
    let text: string;
    try {
      text = await readSharedFile(ctx.sharedFetches, config.file, 1024 * 1024);
    } catch (err) {
      return ctx.fail(`cannot read \`${config.file}\`: ${(err as Error).message}`, ['file']);
    }
    return ctx.fail(`the file holds ${text}`, ['file']);
  },
});

describe('admin UI validation: the answer is bounded however many problems a paste has', () => {
  let gw: RunningGateway;
  let port: number;
  before(async () => {
    port = await freePort();
    gw = await startGateway({ binds: [{ port, listeners: [{ routes: [{ name: 'hello', policies: { directResponse: { status: 200, body: 'hi' } } }] }] }] });
  });
  after(() => gw.stop());

  /** A paste checked by the validator while data-plane requests run: its answer and how late each request was. */
  async function pasteMeasured(text: string): Promise<{ status: number; answer: Answer & { more?: { errors: number } } }> {
    const check = fetch(`${gw.adminUrl}/ui/api/validate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text }) }).then(async (res) => ({
      status: res.status,
      answer: (await res.json()) as Answer & { more?: { errors: number } },
    }));
    const latencies = await requestsWhile(check, `http://127.0.0.1:${port}/`, 'hi');
    assert.ok(latencies.length >= 3, `only ${latencies.length} requests while the check ran`);
    assert.ok(Math.max(...latencies) < 1_000, `slowest data-plane request took ${Math.max(...latencies)} ms (${latencies.length} requests)`);
    return check;
  }

  it('24,387 misspelled policies (1 MiB): data-plane requests keep being answered within a second', async () => {
    // Before: the check (schema with every error, a wording and did-you-mean per error, a frame per error) held the
    // event loop for 6-15 s, and every request to the gateway waited that long.
    const routes = Array.from({ length: 24_387 }, () => '{policies: {directRespons: {status: 2}}}').join(',');
    const text = `binds: [{port: 8080, listeners: [{routes: [${routes}]}]}]`;
    const { status, answer } = await pasteMeasured(text);
    assert.equal(status, 200);
    assert.equal(answer.ok, false);
    assert.equal(answer.errors!.length, 100);
    assert.deepEqual(answer.more, { errors: 24_287, warnings: 0 });
    assert.match(answer.errors![0]!.message, /unknown policy `directRespons`; did you mean `directResponse`\?/);
  });

  it('24,000 CEL typos (1 MiB, each passing the schema): the compile lets requests through, 100 come back positioned', async () => {
    // Before (ADR 0179): the compile held the event loop for seconds (its awaits yield to nothing), then all 24,000
    // problems were positioned on it (19 s on the loaded machine), for an answer that shows 100.
    const routes = Array.from({ length: 24_000 }, () => '{policies: {authorization: {rules: [x]}}}').join(',');
    const text = `binds: [{port: 8080, listeners: [{routes: [${routes}]}]}]`;
    const { status, answer } = await pasteMeasured(text);
    assert.equal(status, 200);
    assert.equal(answer.ok, false);
    assert.equal(answer.errors!.length, 100);
    assert.deepEqual(answer.more, { errors: 23_900, warnings: 0 });
    assert.equal(answer.errors![99]!.path, 'binds[0].listeners[0].routes[99].policies.authorization.rules[0]');
    assert.match(answer.errors![99]!.message, /unknown variable `x`/);
  });

  it('2,000 misspelled policies: the first 100 come back with their frames, the rest are counted', async () => {
    // A 1 MiB paste holds about 25,000 such problems: all of them answered 23 MB (and 10.7 MB more in `error`).
    const routes = Array.from({ length: 2000 }, () => '{policies: {directRespons: {status: 2}}}').join(',');
    const text = `binds: [{port: 8080, listeners: [{routes: [${routes}]}]}]`;
    const res = await fetch(`${gw.adminUrl}/ui/api/validate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text }) });
    assert.equal(res.status, 200);
    const body = await res.text();
    const answer = JSON.parse(body) as Answer & { error: string; more?: { errors: number; warnings: number } };
    assert.equal(answer.ok, false);
    assert.equal(answer.errors!.length, 100);
    assert.deepEqual(answer.more, { errors: 1900, warnings: 0 });
    assert.match(answer.errors![99]!.message, /unknown policy `directRespons`; did you mean `directResponse`\?/);
    assert.match(answer.error, /1,900 more problems not shown/);
    assert.ok(body.length < 200_000, `the answer is ${body.length} bytes`);
  });

  it('150 files left unchecked beside 130 compile errors: 100 of each come back, the rest counted', async () => {
    // The compile's problems are positioned the first 100 of each kind (ADR 0179); the counts stay whole.
    const routes = [
      ...Array.from({ length: 150 }, (_, i) => `{policies: {basicAuth: {htpasswd: {file: /etc/users-${i}}}, directResponse: {status: 200}}}`),
      ...Array.from({ length: 130 }, () => '{policies: {authorization: {rules: [x]}}}'),
    ].join(',');
    const { status, answer } = await pasteMeasured(`binds: [{port: 8080, listeners: [{routes: [${routes}]}]}]`);
    assert.equal(status, 200);
    assert.equal(answer.errors!.length, 100);
    assert.equal(answer.warnings!.length, 100);
    assert.deepEqual(answer.more, { errors: 30, warnings: 50 });
    assert.equal(answer.warnings![99]!.path, 'binds[0].listeners[0].routes[99].policies.basicAuth.htpasswd.file');
  });
});

describe('admin UI validation with a plugin that does not know `ctx.checkOnly`', () => {
  let gw: RunningGateway;
  let port: number;
  before(async () => {
    port = await freePort();
    gw = await startGateway({ binds: [{ port, listeners: [{ routes: [{ name: 'hello', policies: { directResponse: { status: 200 } } }] }] }] }, { preset: fullPresetWith(careless) });
  });
  after(() => gw.stop());

  it('the SDK\'s file reader reads nothing for a paste, whichever plugin asks', async () => {
    const file = join(testTempDir('switchyard-careless-'), 'secret');
    writeFileSync(file, CONTENT);
    const paste = { binds: [{ port, listeners: [{ routes: [{ name: 'r', policies: { carelessReader: { file }, directResponse: { status: 200 } } }] }] }] };
    const res = await fetch(`${gw.adminUrl}/ui/api/validate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text: JSON.stringify(paste) }) });
    const answer = (await res.json()) as Answer;
    assert.doesNotMatch(JSON.stringify(answer), new RegExp(CONTENT));
    assert.equal(answer.ok, false);
    assert.match(answer.errors![0]!.message, /not read: the admin UI's validator reads no file/);
  });
});
