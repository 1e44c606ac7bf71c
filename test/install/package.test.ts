// Issue 9 item 1: the npm package runs where a user installs it. `npm pack` (whose prepack builds JavaScript and
// .d.ts into build/, docs/adr/0022) on a copy of this checkout, `npm install` of the tarball into a scratch app
// (test/helpers/packed-install.ts, shared with the peers bench), then the installed `switchyard` command: --version,
// --validate-only on a shipped example, a gateway proxying a request with type stripping off, and a third-party
// plugin written in TypeScript that imports `switchyard/sdk` from the installed package (its source type-checks
// against the installed .d.ts; a wrong field does not; a guard whose instance breaks the `switchyard/slots/ai`
// contract does not compile), and the three example plugin packages of examples/plugins
// (test/install/example-plugins.ts, registered here to share this one pack and install).
import assert from 'node:assert/strict';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { once } from 'node:events';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import { stringify } from 'yaml';
import { parse } from 'yaml';
import { parseDockerfile } from '../deploy/dockerfile.ts';
import { runCommand, startCli } from '../helpers/cli-process.ts';
import { describeExamplePlugins } from './example-plugins.ts';
import { PACKAGE_ENV, packAndInstall } from '../helpers/packed-install.ts';
import type { Run } from '../helpers/cli-process.ts';
import { freePort } from '../helpers/ports.ts';
import { assertStarterAnswers, starterOnFreePorts } from '../helpers/starter.ts';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const PKG = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { name: string; version: string };
const PLUGIN_FIXTURE = fileURLToPath(new URL('./fixtures/switchyard-plugin-stamp/', import.meta.url));
const TSC = join(ROOT, 'node_modules/typescript/bin/tsc');
/** npm pack (a tsc build) plus an npm install of ~230 packages from the npm cache: slow on a shared machine. */
const SETUP_MS = 480_000;

/** `node` on PATH is the Node running this test, for npm, npx and `#!/usr/bin/env node`. */
const ENV = PACKAGE_ENV;

const ok = (r: Run, what: string): Run => {
  assert.equal(r.code, 0, `${what} failed (exit ${r.code}):\n${r.stdout}\n${r.stderr}`);
  return r;
};

describe('the npm package, packed and installed (issue 9)', { timeout: SETUP_MS + 600_000 }, () => {
  let tmp: string;
  let stage: string;
  let app: string;
  let packedFiles: string[];
  let installed: string;

  before(
    async () => {
      tmp = realpathSync(mkdtempSync(join(tmpdir(), 'switchyard-pkg-')));
      ({ stage, packedFiles, app, installed } = await packAndInstall(ROOT, tmp, SETUP_MS));
      assert.equal(installed, join(app, 'node_modules', PKG.name));
    },
    { timeout: SETUP_MS },
  );

  after(() => {
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  it('postpack puts the clone package.json back; the packed one points exports at build/', () => {
    assert.equal(readFileSync(join(stage, 'package.json'), 'utf8'), readFileSync(join(ROOT, 'package.json'), 'utf8'));
    assert.ok(!existsSync(join(stage, '.package.json.prepack')));
    const packed = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')) as { exports: Record<string, unknown>; devDependencies?: unknown };
    assert.deepEqual(packed.exports['./sdk'], { types: './build/kernel/sdk/index.d.ts', default: './build/bundle/kernel.sdk.index.js' });
    assert.equal(packed.devDependencies, undefined);
  });

  it('ships built JavaScript and declarations, no TypeScript sources, tests or node_modules', () => {
    for (const f of ['LICENSE', 'README.md', 'package.json', 'bin/switchyard.js', 'bin/check-node.js', 'bin/node-flags.js', 'build/bundle/kernel.sdk.index.js', 'build/kernel/sdk/index.d.ts', 'build/kernel/index.d.ts', 'build/bundle/plugins.presets.full.js', 'schemas/switchyard.schema.json', 'examples/quickstart.yaml', 'deploy/systemd/switchyard.service']) {
      assert.ok(packedFiles.includes(f), `the tarball holds ${f}`);
    }
    const wrong = packedFiles.filter((f) => (f.endsWith('.ts') && !f.endsWith('.d.ts')) || /(^|\/)(test|node_modules)\//.test(f) || /\.test\./.test(f));
    assert.deepEqual(wrong, []);
    // The Envoy protos are read beside the built module at run time.
    assert.ok(packedFiles.includes('build/plugins/lib/envoy-protos/envoy/service/auth/v3/external_auth.proto'));
    // The declarations name modules as a consumer resolves them.
    assert.doesNotMatch(readFileSync(join(installed, 'build/kernel/sdk/index.d.ts'), 'utf8'), /from '\.\/[^']+\.ts'/);
  });

  it('holds no private keys, certificates with keys or environment files (ADR 0146)', () => {
    const named = packedFiles.filter((f) => /(^|\/)\.env(\.|$)|\.(pem|key|p12|pfx|crt)$|(^|\/)\.npmrc$/.test(f));
    assert.deepEqual(named, []);
    const keyed = packedFiles.filter((f) => !f.endsWith('.map') && /-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(readFileSync(join(installed, f), 'latin1')));
    assert.deepEqual(keyed, []);
  });

  it('`npx switchyard --version` runs the installed command', async () => {
    const r = ok(await runCommand('npx', ['--no-install', 'switchyard', '--version'], { cwd: app, env: ENV }), 'npx switchyard --version');
    assert.equal(r.stdout, `switchyard ${PKG.version}\n`);
  });

  it('`--validate-only` accepts the shipped examples, a JavaScript plugin package among them', async () => {
    for (const example of ['quickstart.yaml', 'traffic-policies.yaml', 'plugins/example.yaml']) {
      const r = await runCommand('npx', ['--no-install', 'switchyard', '--validate-only', '-f', join(installed, 'examples', example)], { cwd: app, env: ENV });
      assert.equal(r.code, 0, `${example}: ${r.stderr}`);
      assert.equal(r.stdout, 'Configuration is valid!\n');
    }
  });

  // The README sends package users to node_modules/switchyard/examples/, whose comments give a clone's commands
  // (`node bin/switchyard.js -f examples/auth.yaml`): run there, every one loads, the files it names found
  // (examples/auth.yaml's htpasswd and JWKS are relative to the working directory: from the app folder they are not).
  it('every shipped example validates run as its comments say, from node_modules/switchyard', async () => {
    const examples = packedFiles.filter((f) => /^examples\/.*\.ya?ml$/.test(f));
    assert.ok(examples.includes('examples/auth.yaml') && examples.length >= 10, examples.join(' '));
    for (const example of examples) {
      const r = await runCommand(process.execPath, ['bin/switchyard.js', '--validate-only', '-f', example], { cwd: installed, env: ENV });
      assert.equal(r.code, 0, `${example}: ${r.stderr}`);
      assert.equal(r.stdout, 'Configuration is valid!\n');
    }
  });

  it('`switchyard init` names the installed schema', async () => {
    ok(await runCommand('npx', ['--no-install', 'switchyard', 'init'], { cwd: app, env: ENV }), 'switchyard init');
    const ref = /^# yaml-language-server: \$schema=(\S+)/.exec(readFileSync(join(app, 'switchyard.yaml'), 'utf8'))![1]!;
    assert.equal(ref, `node_modules/${PKG.name}/schemas/switchyard.schema.json`);
    assert.ok(existsSync(resolve(app, ref)));
  });

  // The README's "From an empty folder to the first proxied request", with the starter's ports moved to free ones.
  it("the README's first request: init, --validate-only, then /hello answered and /api/anything proxied", async () => {
    ok(await runCommand('npx', ['--no-install', 'switchyard', 'init', '-f', 'first.yaml'], { cwd: app, env: ENV }), 'switchyard init -f first.yaml');
    const valid = ok(await runCommand('npx', ['--no-install', 'switchyard', '--validate-only', '-f', 'first.yaml'], { cwd: app, env: ENV }), '--validate-only');
    assert.equal(valid.stdout, 'Configuration is valid!\n');
    const { text, front } = await starterOnFreePorts(readFileSync(join(app, 'first.yaml'), 'utf8'));
    writeFileSync(join(app, 'first.yaml'), text);
    const gw = await startCli(join(app, 'node_modules/.bin/switchyard'), ['-f', 'first.yaml'], { cwd: app, env: ENV, readyMs: 60_000 });
    try {
      await assertStarterAnswers(front);
    } finally {
      assert.equal(await gw.stop(), 0, gw.output());
    }
  });

  it('the programmatic entry and the SDK import from the installed package', async () => {
    const script = "const [k, s] = await Promise.all([import('switchyard'), import('switchyard/sdk')]); console.log(typeof k.createGateway, typeof s.definePolicy);";
    const r = ok(await runCommand(process.execPath, ['--no-experimental-strip-types', '--input-type=module', '-e', script], { cwd: app, env: ENV }), 'import');
    assert.equal(r.stdout, 'function function\n');
  });

  it('the slot modules import from the installed package: switchyard/slots/ai, /mcp, /backend-auth', async () => {
    const script = [
      "const [ai, mcp, auth] = await Promise.all([import('switchyard/slots/ai'), import('switchyard/slots/mcp'), import('switchyard/slots/backend-auth')]);",
      'console.log(ai.guardSlot.name, ai.llmProviderSlot.name, mcp.mcpTransportSlot.name, mcp.mcpTargetPoliciesSlot.name, auth.backendAuthSlot.name, typeof ai.defineGuard, typeof mcp.defineMcpTransport, typeof auth.defineBackendAuth);',
    ].join('\n');
    const r = ok(await runCommand(process.execPath, ['--no-experimental-strip-types', '--input-type=module', '-e', script], { cwd: app, env: ENV }), 'import');
    assert.equal(r.stdout, 'guard llmProvider mcpTransport mcpTargetPolicies backendAuth function function function\n');
    const packed = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')) as { exports: Record<string, unknown> };
    assert.deepEqual(packed.exports['./slots/ai'], { types: './build/plugins/lib/slots/ai.d.ts', default: './build/bundle/plugins.lib.slots.ai.js' });
    for (const f of ['ai', 'mcp', 'backend-auth']) assert.ok(existsSync(join(installed, `build/plugins/lib/slots/${f}.d.ts`)), `${f}.d.ts is packed`);
  });

  it('the exports and the CLI share one bundle: a slot a third-party plugin imports is the object the preset uses (ADR 0057)', async () => {
    const script = [
      "const [full, ai, sdk] = await Promise.all([import('switchyard/presets/full'), import('switchyard/slots/ai'), import('switchyard/sdk')]);",
      'const policy = full.fullPreset.find((p) => p.slots?.includes(ai.guardSlot));',
      'console.log(policy?.key, sdk.isPlugin(policy));',
    ].join('\n');
    const r = ok(await runCommand(process.execPath, ['--no-experimental-strip-types', '--input-type=module', '-e', script], { cwd: app, env: ENV }), 'import');
    assert.equal(r.stdout, 'ai true\n');
    // The code is the bundle's; tsc's JavaScript is not shipped beside the declarations.
    for (const f of ['build/kernel/sdk/index.js', 'build/kernel/boot/dist-entry.js', 'build/plugins/presets/full.js']) assert.ok(!packedFiles.includes(f), `no ${f}`);
  });

  describe('a third-party plugin in TypeScript, compiled against the installed package', () => {
    let pluginSrc: string;

    before(() => {
      // The plugin's own folder inside the app: `switchyard` resolves from app/node_modules, as for an author who
      // has the gateway installed; @types/node is the author's devDependency.
      pluginSrc = join(app, 'plugin-src');
      cpSync(PLUGIN_FIXTURE, pluginSrc, { recursive: true });
      mkdirSync(join(pluginSrc, 'node_modules/@types'), { recursive: true });
      symlinkSync(join(ROOT, 'node_modules/@types/node'), join(pluginSrc, 'node_modules/@types/node'), 'dir');
    });

    it('`tsc --noEmit` passes on its source against the installed .d.ts (skipLibCheck off)', async () => {
      const r = await runCommand(process.execPath, [TSC, '--noEmit', '-p', pluginSrc], { cwd: pluginSrc, env: ENV, timeout: 120_000 });
      assert.equal(r.code, 0, `${r.stdout}${r.stderr}`);
    });

    it('the types are real: a wrong phase is a type error, not an unresolved module', async () => {
      mkdirSync(join(pluginSrc, 'wrong'));
      writeFileSync(
        join(pluginSrc, 'wrong/index.ts'),
        "import { definePolicy } from 'switchyard/sdk';\nexport default definePolicy({ key: 'x', description: 'x', schema: {}, attach: ['routePolicies'], phase: 'notAPhase', compile: () => ({}) });\n",
      );
      writeFileSync(join(pluginSrc, 'tsconfig.wrong.json'), JSON.stringify({ extends: './tsconfig.json', compilerOptions: { rootDir: 'wrong', noEmit: true }, include: ['wrong'] }));
      const r = await runCommand(process.execPath, [TSC, '-p', join(pluginSrc, 'tsconfig.wrong.json')], { cwd: pluginSrc, env: ENV, timeout: 120_000 });
      assert.notEqual(r.code, 0);
      assert.match(r.stdout, /wrong\/index\.ts\(2,\d+\): error TS2322: .*"notAPhase"/);
      assert.doesNotMatch(r.stdout, /TS2307/);
    });

    it('the slot contracts are types: a guard whose instance has no `check` is a type error', async () => {
      mkdirSync(join(pluginSrc, 'wrong-guard'));
      writeFileSync(
        join(pluginSrc, 'wrong-guard/index.ts'),
        "import { defineGuard } from 'switchyard/slots/ai';\nexport default defineGuard({ key: 'x', description: 'x', schema: {}, compile: () => ({ inspect: () => 'pass' }) });\n",
      );
      writeFileSync(join(pluginSrc, 'tsconfig.wrong-guard.json'), JSON.stringify({ extends: './tsconfig.json', compilerOptions: { rootDir: 'wrong-guard', noEmit: true }, include: ['wrong-guard'] }));
      const r = await runCommand(process.execPath, [TSC, '-p', join(pluginSrc, 'tsconfig.wrong-guard.json')], { cwd: pluginSrc, env: ENV, timeout: 120_000 });
      assert.notEqual(r.code, 0);
      assert.match(r.stdout, /wrong-guard\/index\.ts\(2,\d+\): error TS\d+: .*(inspect|check)/);
      assert.doesNotMatch(r.stdout, /TS2307/);
    });

    describe('installed into the app and loaded by the installed gateway', () => {
      let upstream: TestUpstream;
      let front: number;
      let admin: number;
      let gw: Awaited<ReturnType<typeof startCli>>;

      before(async () => {
        ok(await runCommand(process.execPath, [TSC, '-p', pluginSrc], { cwd: pluginSrc, env: ENV, timeout: 120_000 }), 'tsc build of the plugin');
        // As `npm install` lays out a published package: package.json and the compiled files.
        const target = join(app, 'node_modules/switchyard-plugin-stamp');
        mkdirSync(target);
        cpSync(join(pluginSrc, 'package.json'), join(target, 'package.json'));
        cpSync(join(pluginSrc, 'dist'), join(target, 'dist'), { recursive: true });
        upstream = await startUpstream();
        front = await freePort();
        admin = await freePort();
        const config = {
          config: { adminAddr: `127.0.0.1:${admin}`, statsAddr: 'off', readinessAddr: 'off', plugins: ['switchyard-plugin-stamp'] },
          binds: [
            {
              port: front,
              listeners: [
                {
                  routes: [
                    { name: 'throws', matches: [{ path: { pathPrefix: '/throw' } }], policies: { stampHeader: { value: '!throw' } }, backends: [{ host: `127.0.0.1:${upstream.port}` }] },
                    { name: 'echo', matches: [{ path: { pathPrefix: '/echo' } }], backends: [{ stampEcho: {} }] },
                    { name: 'stamped', policies: { stampHeader: { value: 'from-ts' } }, backends: [{ host: `127.0.0.1:${upstream.port}` }] },
                  ],
                },
              ],
            },
          ],
        };
        writeFileSync(join(app, 'gateway.yaml'), stringify(config));
        // Type stripping off: everything that runs must be the built JavaScript.
        const env = { ...ENV, NODE_OPTIONS: '--no-experimental-strip-types' };
        // The command npm linked (npx would not pass SIGTERM on to it): the gateway is this child's own PID.
        gw = await startCli(join(app, 'node_modules/.bin/switchyard'), ['-f', 'gateway.yaml'], { cwd: app, env, readyMs: 60_000 });
      });

      after(async () => {
        if (gw) assert.equal(await gw.stop(), 0, gw.output());
        await upstream?.close();
      });

      it('proxies a request through the plugin to the upstream', async () => {
        const res = await request(`http://127.0.0.1:${front}/orders/7?x=1`, { headers: { 'x-client': 'c' } });
        assert.equal(res.statusCode, 200);
        assert.equal(res.headers['x-stamp'], 'from-ts');
        assert.equal(res.headers['x-upstream'], 'yes');
        const echoed = (await res.body.json()) as { url: string };
        assert.equal(echoed.url, '/orders/7?x=1');
        const seen = upstream.received.at(-1)!;
        assert.equal(seen.headers['x-stamp'], 'from-ts');
        assert.equal(seen.headers['x-client'], 'c');
      });

      // ADR 0065: the bundle ships its source maps; a stack the gateway logs names the kernel's TypeScript sources.
      it("a logged stack names the kernel's source files (kernel/…/*.ts:line:col), not bundle chunks", async () => {
        const res = await request(`http://127.0.0.1:${front}/throw`);
        assert.equal(res.statusCode, 500);
        await res.body.dump();
        await gw.waitFor(/request hook failed/);
        const line = gw.output().split('\n').find((l) => l.includes('request hook failed'))!;
        assert.match(line, /stampHeader was asked to throw/);
        // ADR 0144: the line names the plugin and its package.
        assert.match(line, /plugin=stampHeader package=switchyard-plugin-stamp@1\.0\.0/);
        assert.match(line, new RegExp(`${installed}/kernel/[a-z-]+/[a-z-]+\\.ts:\\d+:\\d+`), line);
        assert.doesNotMatch(line, /build\/bundle\/[^ ]*\.js:\d+/, line);
      });

      it("the admin UI's doc links resolve in the installed package; the docs it does not link are not shipped", async () => {
        const app = await (await request(`http://127.0.0.1:${admin}/ui/app.js`)).body.text();
        const linked = [...new Set([...app.matchAll(/'([a-z0-9-]+\.md)'/g)].map((m) => m[1]!))];
        assert.ok(linked.includes('security.md') && linked.includes('phases.md'), linked.join(', '));
        for (const name of linked) {
          const res = await request(`http://127.0.0.1:${admin}/ui/docs/${name}`);
          const text = await res.body.text();
          assert.equal(res.statusCode, 200, `/ui/docs/${name}: ${text}`);
          assert.match(text, /^# /m);
        }
        const perf = await request(`http://127.0.0.1:${admin}/ui/docs/perf.md`);
        assert.equal(perf.statusCode, 404);
        await perf.body.dump();
        const docs = packedFiles.filter((f) => f.startsWith('build/docs/')).sort();
        assert.deepEqual(docs, linked.map((n) => `build/docs/${n}`).sort());
      });

      it('a backend kind of the package answers with a request header and the body', async () => {
        const res = await request(`http://127.0.0.1:${front}/echo`, { method: 'POST', headers: { 'x-tenant': 'acme' }, body: 'hello' });
        assert.equal(res.statusCode, 200);
        assert.deepEqual(await res.body.json(), { header: 'acme', body: 'hello' });
      });

      it('`switchyard plugins` names the plugin package', async () => {
        const r = ok(await runCommand('npx', ['--no-install', 'switchyard', 'plugins', '-f', 'gateway.yaml'], { cwd: app, env: ENV }), 'plugins');
        assert.match(r.stdout, /^policy\s+stampHeader\s+switchyard-plugin-stamp@1\.0\.0\s/m);
        assert.match(r.stdout, /^backend\s+stampEcho\s+switchyard-plugin-stamp@1\.0\.0\s/m);
      });

      it('`switchyard schema -f` assembles the schema with the package\'s keys, for editor completion', async () => {
        const r = ok(await runCommand('npx', ['--no-install', 'switchyard', 'schema', '-f', 'gateway.yaml'], { cwd: app, env: ENV }), 'schema');
        const schema = JSON.parse(r.stdout) as { $defs: Record<string, { properties?: Record<string, { description?: string }> }> };
        assert.equal(schema.$defs['policy.stampHeader']?.properties?.value?.description, 'Header value.');
        assert.equal(schema.$defs['backend.stampEcho']?.properties?.header?.description, 'The header echoed (default x-tenant).');
        assert.ok(schema.$defs['slot.routePolicies']?.properties?.stampHeader, 'a route policy key');
        assert.ok(schema.$defs['slot.backend']?.properties?.stampEcho, 'a backend key');
      });
    });
  });

  describe('stack traces (ADR 0065)', () => {
    it('every bundle file ships its source map, naming kernel/ and plugins/ sources (TypeScript, and the JSON bundled in) without their text', () => {
      const js = packedFiles.filter((f) => f.startsWith('build/bundle/') && f.endsWith('.js'));
      assert.ok(js.length > 10);
      for (const f of js) assert.ok(packedFiles.includes(`${f}.map`), `${f}.map is packed`);
      const sources = new Set<string>();
      for (const f of js) {
        const map = JSON.parse(readFileSync(join(installed, `${f}.map`), 'utf8')) as { sources: string[]; sourcesContent?: unknown };
        assert.equal(map.sourcesContent, undefined, f);
        for (const src of map.sources) sources.add(src);
      }
      const wrong = [...sources].filter((src) => !/^\.\.\/\.\.\/(kernel|plugins)\/.+\.(ts|json)$/.test(src));
      assert.deepEqual(wrong, []);
      assert.ok(sources.has('../../kernel/sdk/reply.ts') && sources.has('../../kernel/runtime/request-pipeline.ts'));
    });

    it("a fatal uncaught exception, as Node prints it, names the kernel's source files", async () => {
      const port = await freePort();
      const config = {
        config: { adminAddr: 'off', statsAddr: 'off', readinessAddr: 'off', plugins: ['switchyard-plugin-stamp'] },
        binds: [{ port, listeners: [{ routes: [{ policies: { stampHeader: { value: '!crash' } }, backends: [{ host: '127.0.0.1:9' }] }] }] }],
      };
      writeFileSync(join(app, 'crash.yaml'), stringify(config));
      // The stamp plugin is in node_modules since 'installed into the app and loaded by the installed gateway'.
      const cli = await startCli(join(app, 'node_modules/.bin/switchyard'), ['-f', 'crash.yaml'], { cwd: app, env: ENV, readyMs: 60_000 });
      const closed = once(cli.child, 'close') as Promise<[number | null]>;
      await request(`http://127.0.0.1:${port}/`).then((r) => r.body.dump(), () => undefined);
      const timer = setTimeout(() => void cli.stop(), 15_000);
      const [code] = await closed;
      clearTimeout(timer);
      assert.equal(code, 1, cli.output());
      const out = cli.output();
      assert.match(out, /Error: stampHeader was asked to crash the process/);
      assert.match(out, new RegExp(`    at .*${installed}/kernel/[a-z-]+/[a-z-]+\\.ts:\\d+:\\d+`), out);
    });

    it('NODE_OPTIONS=--enable-source-maps: Node maps every stack itself', async () => {
      const script = "import('switchyard/sdk').then((s) => { try { s.jsonErrorReply(400, 'bad', 'm', null); } catch (e) { console.log(e.stack); } });";
      const r = ok(await runCommand(process.execPath, ['--input-type=module', '-e', script], { cwd: app, env: { ...ENV, NODE_OPTIONS: '--enable-source-maps' } }), 'script');
      assert.match(r.stdout, new RegExp(`${installed}/kernel/sdk/[a-z-]+\\.ts:\\d+:\\d+`), r.stdout);
    });
  });

  describeExamplePlugins(() => app, ENV);

  describe("the container image's command line (Dockerfile ENTRYPOINT + CMD and HEALTHCHECK)", () => {
    // No container engine runs here. The image's install stage is this app (`npm install --omit=dev` of the
    // tarball in /opt/switchyard), so the runtime stage's exact command line runs against it, with the image's
    // paths mapped onto the scratch folder and the image's config moved to free loopback ports.
    const image = parseDockerfile(readFileSync(join(ROOT, 'Dockerfile'), 'utf8')).at(-1)!;
    const exec = (keyword: string): string[] => image.instructions.find((i) => i.keyword === keyword)?.exec ?? [];
    let gw: Awaited<ReturnType<typeof startCli>> | undefined;
    let front: number;
    let readiness: number;
    let onHost: (arg: string) => string;

    before(async () => {
      const etc = join(tmp, 'etc-switchyard');
      mkdirSync(etc);
      front = await freePort();
      readiness = await freePort();
      const config = parse(readFileSync(join(ROOT, 'deploy/container/config.yaml'), 'utf8')) as {
        config: Record<string, unknown>;
        binds: { port: number; address?: string }[];
      };
      const imageReadinessPort = String(config.config.readinessAddr).split(':').pop()!;
      config.config.adminAddr = `127.0.0.1:${await freePort()}`;
      config.config.statsAddr = `127.0.0.1:${await freePort()}`;
      config.config.readinessAddr = `127.0.0.1:${readiness}`;
      config.binds[0]!.port = front;
      config.binds[0]!.address = '127.0.0.1';
      writeFileSync(join(etc, 'config.yaml'), stringify(config));
      onHost = (arg) =>
        arg
          .replaceAll('/opt/switchyard', app)
          .replaceAll('/etc/switchyard', etc)
          .replaceAll(`127.0.0.1:${imageReadinessPort}/`, `127.0.0.1:${readiness}/`);
      const [init, dashes, file, ...args] = [...exec('ENTRYPOINT'), ...exec('CMD')].map(onHost);
      assert.deepEqual([init, dashes], ['/usr/bin/tini', '--'], 'tini is PID 1');
      // The image's `node` is Node 24; here that is the one running the tests (the PATH's may be older).
      assert.equal(file, 'node');
      assert.ok(args.includes('--max-semi-space-size=2'), 'the entrypoint gives the semi-space cap, so the CLI does not re-execute itself');
      const env = { ...ENV, NODE_OPTIONS: '--no-experimental-strip-types', NODE_ENV: 'production' };
      // Through tini where it is installed (Debian's `tini`, as in the image; .ci/run installs it): SIGTERM must reach the
      // gateway through it. Not PID 1 here, so tini registers as a child subreaper instead (TINI_SUBREAPER).
      gw = existsSync(init!)
        ? await startCli(init!, [dashes!, process.execPath, ...args], { cwd: app, env: { ...env, TINI_SUBREAPER: '1' }, readyMs: 60_000 })
        : await startCli(process.execPath, args, { cwd: app, env, readyMs: 60_000 });
    });

    after(async () => {
      if (gw && gw.child.exitCode === null) await gw.stop();
    });

    it('starts the installed gateway on the mounted config and answers on its bind', async () => {
      const res = await request(`http://127.0.0.1:${front}/`);
      assert.equal(res.statusCode, 200);
      assert.match(await res.body.text(), /Switchyard is running/);
    });

    it('HEALTHCHECK passes while the gateway is ready and fails once it has stopped (STOPSIGNAL drains and exits 0)', async () => {
      const health = image.instructions.find((i) => i.keyword === 'HEALTHCHECK')!.text;
      const [node, ...args] = (JSON.parse(health.slice(health.indexOf('CMD') + 3)) as string[]).map(onHost);
      assert.equal(node, 'node');
      const healthy = await runCommand(process.execPath, args, { cwd: app, env: ENV });
      assert.equal(healthy.code, 0, healthy.stderr);
      const signal = image.instructions.find((i) => i.keyword === 'STOPSIGNAL')!.text;
      assert.equal(signal, 'SIGTERM', 'startCli.stop sends SIGTERM');
      assert.equal(await gw!.stop(), 0, gw!.output());
      const down = await runCommand(process.execPath, args, { cwd: app, env: ENV });
      assert.equal(down.code, 1);
    });
  });
});
