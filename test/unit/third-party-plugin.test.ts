// A third-party plugin package (examples/plugins/switchyard-plugin-example) loaded through `config.plugins`,
// the way an application installs it: the app's node_modules holds `switchyard` and the plugin package.
import assert from 'node:assert/strict';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import { stringify } from 'yaml';
import { assembleSchema, ConfigLoadError, createGateway, LogSink } from 'switchyard';
import type { Gateway } from 'switchyard';
import { FIRST_PARTY_KEYS } from '../../plugins/presets/catalog.ts';
import { fullPreset } from '../../plugins/presets/full.ts';
import { freePort } from '../helpers/ports.ts';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';
import { testTempDir } from '../helpers/temp-dir.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const EXAMPLE = join(ROOT, 'examples/plugins/switchyard-plugin-example');
const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';

/**
 * An application folder: node_modules/switchyard → this repository, node_modules/switchyard-plugin-example →
 * the example (a symlink, as `npm link` or a workspace makes it; or a copy, as `npm install` makes it).
 */
function makeApp(layout: 'linked' | 'installed'): string {
  const app = testTempDir('switchyard-app-');
  mkdirSync(join(app, 'node_modules'));
  symlinkSync(ROOT, join(app, 'node_modules/switchyard'), 'dir');
  if (layout === 'linked') symlinkSync(EXAMPLE, join(app, 'node_modules/switchyard-plugin-example'), 'dir');
  else cpSync(EXAMPLE, join(app, 'node_modules/switchyard-plugin-example'), { recursive: true });
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'my-gateway', private: true, type: 'module' }));
  return app;
}

async function staticBlock(): Promise<Record<string, unknown>> {
  return {
    adminAddr: `127.0.0.1:${await freePort()}`,
    statsAddr: 'off',
    readinessAddr: 'off',
    plugins: ['switchyard-plugin-example'],
  };
}

function gatewayFor(file: string, logs: string[] = []): Gateway {
  const sink = new LogSink((chunk) => logs.push(...chunk.split('\n').filter(Boolean)));
  return createGateway({ preset: fullPreset, knownKeys: FIRST_PARTY_KEYS, config: { file }, watch: false }, sink);
}

// 'installed' first: it must work before the loader's fallback for linked packages is ever registered.
for (const layout of ['installed', 'linked'] as const) {
  describe(`third-party plugin package (${layout} in the app's node_modules)`, () => {
    let app: string;
    let upstream: TestUpstream;
    let gateway: Gateway;
    let port: number;
    const logs: string[] = [];

    before(async () => {
      app = makeApp(layout);
      upstream = await startUpstream();
      port = await freePort();
      const config = {
        config: await staticBlock(),
        binds: [
          {
            port,
            listeners: [
              {
                routes: [
                  {
                    name: 'local',
                    matches: [{ path: { exact: '/local' } }],
                    policies: { addRequestId: {}, directResponse: { status: 418, body: 'teapot' } },
                  },
                  {
                    name: 'proxied',
                    policies: { addRequestId: { prefix: 'edge-' } },
                    backends: [{ host: `127.0.0.1:${upstream.port}` }],
                  },
                ],
              },
            ],
          },
        ],
      };
      writeFileSync(join(app, 'config.yaml'), stringify(config));
      gateway = gatewayFor(join(app, 'config.yaml'), logs);
      await gateway.start();
    });

    after(async () => {
      await gateway?.stop();
      await upstream?.close();
      if (app) rmSync(app, { recursive: true, force: true });
    });

    it('registers the plugin under its package name', () => {
      const entry = gateway.pluginRegistry!.plugins().find((p) => p.plugin.key === 'addRequestId');
      assert.ok(entry, 'addRequestId is registered');
      assert.equal(entry.source.name, 'switchyard-plugin-example@0.1.0');
      assert.equal(entry.source.module, 'switchyard-plugin-example');
    });

    it('sends the generated id upstream and echoes it on the response', async () => {
      const before = upstream.received.length;
      const res = await request(`http://127.0.0.1:${port}/things`);
      assert.equal(res.statusCode, 200);
      await res.body.text();
      const id = res.headers['x-request-id'];
      assert.match(String(id), new RegExp(`^edge-${UUID}$`));
      const seen = upstream.received[before]!;
      assert.equal(seen.headers['x-request-id'], id, 'the upstream received the same id');
    });

    it('keeps an id the client sent', async () => {
      const before = upstream.received.length;
      const res = await request(`http://127.0.0.1:${port}/things`, { headers: { 'x-request-id': 'client-42' } });
      await res.body.text();
      assert.equal(res.headers['x-request-id'], 'client-42');
      assert.equal(upstream.received[before]!.headers['x-request-id'], 'client-42');
    });

    it('puts the id on local replies too (queued response headers)', async () => {
      const res = await request(`http://127.0.0.1:${port}/local`);
      assert.equal(res.statusCode, 418);
      assert.equal(await res.body.text(), 'teapot');
      assert.match(String(res.headers['x-request-id']), new RegExp(`^${UUID}$`));
    });

    it('adds the id to the access log', async () => {
      const res = await request(`http://127.0.0.1:${port}/logged`, { headers: { 'x-request-id': 'log-me-7' } });
      await res.body.text();
      await new Promise((r) => setTimeout(r, 50));
      assert.ok(
        logs.some((l) => l.includes('log-me-7')),
        `an access-log line names the request id; got:\n${logs.slice(-5).join('\n')}`,
      );
    });
  });
}

describe('third-party plugin: config errors and schema', () => {
  let app: string;
  before(() => {
    app = makeApp('linked');
  });
  after(() => rmSync(app, { recursive: true, force: true }));

  async function compileError(policy: unknown): Promise<string> {
    const text = stringify({
      config: await staticBlock(),
      binds: [{ port: await freePort(), listeners: [{ routes: [{ policies: { addRequestId: policy }, backends: [{ host: '127.0.0.1:9' }] }] }] }],
    });
    const file = join(app, 'bad.yaml');
    writeFileSync(file, text);
    const gateway = gatewayFor(file);
    try {
      const snapshot = await gateway.compile(text);
      snapshot.dispose();
      return assert.fail('expected a config error');
    } catch (err) {
      assert.ok(err instanceof ConfigLoadError, `a ConfigLoadError, got ${(err as Error).stack}`);
      return err.message;
    } finally {
      await gateway.stop();
    }
  }

  it("ctx.fail in the plugin's compile() is reported at the offending value with file:line:col", async () => {
    const message = await compileError({ header: 'Host' });
    assert.match(message, /bad\.yaml:\d+:\d+/);
    assert.match(message, /`host` is managed by the gateway/);
    assert.match(message, /addRequestId\.header/);
  });

  it("the plugin's JSON Schema is enforced with a did-you-mean for unknown keys", async () => {
    const message = await compileError({ prefx: 'x-' });
    assert.match(message, /bad\.yaml:\d+:\d+/);
    assert.match(message, /prefx/);
    assert.match(message, /prefix/);
  });

  it('the assembled schema includes the plugin, every property described', async () => {
    const file = join(app, 'schema.yaml');
    writeFileSync(file, stringify({ config: await staticBlock() }));
    const gateway = gatewayFor(file);
    try {
      await gateway.prepare();
      const schema = assembleSchema(gateway.pluginRegistry!) as { $defs: Record<string, { properties?: Record<string, { description?: string }> }> };
      const def = schema.$defs['policy.addRequestId'];
      assert.ok(def, 'policy.addRequestId is in $defs');
      for (const [name, prop] of Object.entries(def.properties ?? {})) assert.ok(prop.description, `addRequestId.${name} has a description`);
      assert.ok(schema.$defs['slot.routePolicies']!.properties!.addRequestId, 'the routePolicies slot lists addRequestId');
    } finally {
      await gateway.stop();
    }
  });
});

describe('examples/plugins/example.yaml', () => {
  it('validates, loading the example plugin by its relative path', async () => {
    const file = join(ROOT, 'examples/plugins/example.yaml');
    const gateway = gatewayFor(file);
    try {
      const snapshot = await gateway.compile(readFileSync(file, 'utf8'));
      assert.ok(snapshot.binds.size >= 1);
      snapshot.dispose();
      assert.ok(gateway.pluginRegistry!.lookup('routePolicies', 'addRequestId'));
    } finally {
      await gateway.stop();
    }
  });
});

// docs/plugin-authoring.md §11 tests a plugin with `createGateway({ config: { file: 'test/config.yaml' } })`: a file
// named relative to the working directory. With `config.plugins` set, the loader made a require from that relative
// folder and the start threw Node's "The argument 'filename' must be ... an absolute path" TypeError.
describe('createGateway with a config file named relative to the working directory (plugin-authoring §11)', () => {
  it('loads the config\'s plugins and serves', async () => {
    const app = makeApp('installed');
    const cwd = process.cwd();
    const port = await freePort();
    mkdirSync(join(app, 'test'));
    const config = { config: await staticBlock(), binds: [{ port, listeners: [{ routes: [{ policies: { addRequestId: { prefix: 'rel-' }, directResponse: { status: 200, body: 'ok' } } }] }] }] };
    writeFileSync(join(app, 'test/config.yaml'), stringify(config));
    process.chdir(app);
    const gateway = gatewayFor('test/config.yaml');
    try {
      await gateway.start();
      const res = await request(`http://127.0.0.1:${port}/`);
      assert.equal(await res.body.text(), 'ok');
      assert.match(String(res.headers['x-request-id']), new RegExp(`^rel-${UUID}$`));
    } finally {
      await gateway.stop();
      process.chdir(cwd);
      rmSync(app, { recursive: true, force: true });
    }
  });
});
