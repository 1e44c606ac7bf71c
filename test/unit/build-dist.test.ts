// Trimmed distributions (ARCHITECTURE.md §9, docs/adr/0012): `npm run build:dist -- --preset NAME` bundles the CLI
// with one preset into plain JavaScript. The minimal bundle must hold none of the plugins and heavy libraries the
// full preset adds, list and run exactly its plugins, and say "not installed" for a left-out first-party key; the
// full bundle must print the committed schema and reach the files its plugins read beside their code.
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { delimiter, dirname, join, relative, resolve, sep } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import { minimalPreset } from '../../plugins/presets/minimal.ts';
import { startEnvoyServer } from '../helpers/envoy-grpc-servers.ts';
import type { TestEnvoyServer } from '../helpers/envoy-grpc-servers.ts';
import { freePort } from '../helpers/ports.ts';
import { findOldNode } from '../helpers/old-node.ts';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';
import { testTempDir } from '../helpers/temp-dir.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const BUILD_TIMEOUT_MS = 90_000;

/** Plain JavaScript: the bundle must run with type stripping off (and so on Node versions without it). */
const NODE_ARGS = ['--no-experimental-strip-types'];
const ENV = (() => {
  const env: NodeJS.ProcessEnv = { ...process.env, NODE_DISABLE_COMPILE_CACHE: '1' };
  delete env.NODE_TEST_CONTEXT;
  delete env.NODE_OPTIONS;
  return env;
})();

/**
 * npm packages the full preset brings and the minimal one must not, each with a string only its code holds (a
 * second marker besides esbuild's `// node_modules/<pkg>/...` module comments). Both markers are checked present
 * in the full bundle, so their absence from the minimal one means something.
 */
const HEAVY: Record<string, string> = {
  '@grpc/grpc-js': 'grpc-node-js',
  '@grpc/proto-loader': 'loadSync',
  protobufjs: 'index out of range: ',
  '@azure/identity': 'DefaultAzureCredential',
  '@aws-sdk/credential-provider-node': 'defaultProvider::fromEnv',
  '@smithy/signature-v4': 'X-Amz-Signature',
  'google-auth-library': 'GoogleAuth',
  '@modelcontextprotocol/sdk': 'SSEClientTransport',
  '@modelcontextprotocol/client': 'StreamableHTTPClientTransport',
  jose: 'JWKSNoMatchingKey',
  bcryptjs: 'bcrypt',
  zod: 'ZodError',
};

/** Plugin folders of the full preset that the minimal one leaves out (a sample from each category). */
const EXCLUDED_PLUGIN_FOLDERS = [
  'plugins/backends/mcp/',
  'plugins/backends/ai/',
  'plugins/backends/service/',
  'plugins/mcp-transports/',
  'plugins/llm-providers/',
  'plugins/guards/',
  'plugins/backend-auth/',
  'plugins/policies/',
  'plugins/lib/envoy-grpc/',
  'plugins/presets/full.ts',
];

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(args: readonly string[], options: { cwd?: string; timeout?: number } = {}): Promise<Run> {
  return new Promise((done) => {
    execFile(process.execPath, args, { cwd: options.cwd ?? ROOT, env: ENV, timeout: options.timeout ?? 30_000, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? ((err as { code: number }).code) : null) : 0;
      done({ code, stdout, stderr });
    });
  });
}

/** Every JavaScript file of a bundle, concatenated. */
function bundleText(out: string): string {
  const parts: string[] = [];
  const walk = (dir: string): void => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      if (e.isDirectory()) walk(join(dir, e.name));
      else if (e.name.endsWith('.mjs')) parts.push(readFileSync(join(dir, e.name), 'utf8'));
    }
  };
  walk(out);
  return parts.join('\n');
}

/**
 * Where this checkout's node_modules really is, as esbuild writes module paths (relative to the checkout, through
 * symlinks): `node_modules`, or for a worktree whose node_modules is a symlink to another checkout's install, the
 * real folder's path (`../../main/node_modules`).
 */
const NODE_MODULES = relative(ROOT, realpathSync(join(ROOT, 'node_modules'))).split(sep).join('/');

/**
 * The module paths esbuild notes above each bundled module (`// node_modules/undici/index.js`), with this checkout's
 * node_modules named `node_modules/` wherever it really is.
 */
function modulePaths(text: string): string[] {
  const ours = (path: string): string => (path.startsWith(`${NODE_MODULES}/`) ? `node_modules/${path.slice(NODE_MODULES.length + 1)}` : path);
  const paths = [...text.matchAll(/^\/\/ (\S+)$/gm)].map((m) => ours(m[1]!));
  return [...new Set(paths.filter((p) => /^(?:node_modules|plugins|kernel)\//.test(p)))];
}

const hasPackage = (paths: readonly string[], pkg: string): boolean => paths.some((p) => p.startsWith(`node_modules/${pkg}/`));

/** Start the bundle as a gateway; resolves once it logs that it is ready. */
async function startBundle(bundle: string, config: string): Promise<{ child: ChildProcess; output: () => string; exit: Promise<number | null> }> {
  const child = spawn(process.execPath, [...NODE_ARGS, bundle, '-f', config], { env: ENV, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const exit = new Promise<number | null>((done) => child.on('exit', (code) => done(code)));
  await new Promise<void>((ready, fail) => {
    const timer = setTimeout(() => fail(new Error(`the bundle did not get ready:\n${output}`)), 15_000);
    const onData = (d: Buffer): void => {
      output += d.toString();
      if (/switchyard ready/.test(output)) {
        clearTimeout(timer);
        ready();
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    void exit.then((code) => {
      clearTimeout(timer);
      fail(new Error(`the bundle exited (${code}) before it was ready:\n${output}`));
    });
  });
  return { child, output: () => output, exit };
}

async function stop(gw: { child: ChildProcess; exit: Promise<number | null> }): Promise<number | null> {
  gw.child.kill('SIGTERM');
  const timer = setTimeout(() => gw.child.kill('SIGKILL'), 10_000);
  const code = await gw.exit;
  clearTimeout(timer);
  return code;
}

describe('trimmed distribution bundles (bin/build-dist.ts)', { timeout: 2 * BUILD_TIMEOUT_MS }, () => {
  let tmp: string;
  let minimal: string;
  let full: string;
  let builds: { minimal: Run; full: Run };

  before(async () => {
    tmp = testTempDir('switchyard-dist-');
    minimal = join(tmp, 'minimal');
    full = join(tmp, 'full');
    // Both at once, through the command line the npm script runs.
    const [m, f] = await Promise.all([
      run(['bin/build-dist.ts', '--preset', 'minimal', '--out', minimal], { timeout: BUILD_TIMEOUT_MS }),
      run(['bin/build-dist.ts', '--preset', 'full', '--out', full], { timeout: BUILD_TIMEOUT_MS }),
    ]);
    builds = { minimal: m, full: f };
  });

  after(() => {
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  it('builds both presets', () => {
    for (const [name, r] of Object.entries(builds)) {
      assert.equal(r.code, 0, `build of ${name} failed:\n${r.stdout}\n${r.stderr}`);
      assert.match(r.stdout, new RegExp(`built .* \\(preset ${name}, \\d+ plugins\\)`));
    }
    for (const out of [minimal, full]) {
      for (const file of ['switchyard.mjs', 'sdk.mjs', 'switchyard.schema.json', 'package.json', 'README.md', 'THIRD-PARTY-NOTICES.txt']) {
        assert.ok(existsSync(join(out, file)), `${out}/${file}`);
      }
    }
    const pkg = JSON.parse(readFileSync(join(minimal, 'package.json'), 'utf8')) as { name: string; dependencies: object; exports: Record<string, string> };
    assert.equal(pkg.name, 'switchyard');
    assert.deepEqual(pkg.dependencies, {}, 'every dependency is bundled');
    assert.equal(pkg.exports['./sdk'], './sdk.mjs');
  });

  it("names what it wrote in package.json `files`, and refuses to wipe an earlier build's folder holding a file of the user's", async () => {
    // `node dist/x/switchyard.mjs -f my.yaml` invites a config beside the bundle: a rebuild deleted it, and
    // `npm pack` of the folder shipped it (secrets and all).
    const { files } = JSON.parse(readFileSync(join(minimal, 'package.json'), 'utf8')) as { files: string[] };
    assert.deepEqual(files, readdirSync(minimal).sort());
    const out = join(tmp, 'rebuild');
    cpSync(minimal, out, { recursive: true });
    writeFileSync(join(out, 'my.yaml'), 'binds: []\n');
    const refused = await run(['bin/build-dist.ts', '--preset', 'minimal', '--out', out], { timeout: BUILD_TIMEOUT_MS });
    assert.equal(refused.code, 1, refused.stdout + refused.stderr);
    assert.match(refused.stderr, /holds files the build did not write \(my\.yaml\)/);
    assert.ok(existsSync(join(out, 'my.yaml')) && existsSync(join(out, 'switchyard.mjs')), 'nothing was removed');
    rmSync(join(out, 'my.yaml'));
    const again = await run(['bin/build-dist.ts', '--preset', 'minimal', '--out', out], { timeout: BUILD_TIMEOUT_MS });
    assert.equal(again.code, 0, again.stderr);
  });

  it('the minimal bundle holds none of the plugins and heavy libraries that only the full preset needs', () => {
    const minimalText = bundleText(minimal);
    const fullText = bundleText(full);
    const minimalPaths = modulePaths(minimalText);
    const fullPaths = modulePaths(fullText);
    // The markers work: the kernel's own libraries are noted in both.
    for (const pkg of ['undici', 'yaml', 'ajv']) assert.ok(hasPackage(minimalPaths, pkg), `minimal bundle notes node_modules/${pkg}`);

    for (const [pkg, marker] of Object.entries(HEAVY)) {
      assert.ok(hasPackage(fullPaths, pkg), `the full bundle holds ${pkg}`);
      assert.ok(fullText.includes(marker), `the full bundle holds ${pkg}'s "${marker}"`);
      assert.ok(!hasPackage(minimalPaths, pkg), `the minimal bundle holds ${pkg}`);
      assert.ok(!minimalText.includes(marker), `the minimal bundle holds "${marker}" (${pkg})`);
    }
    for (const folder of EXCLUDED_PLUGIN_FOLDERS) {
      assert.ok(fullPaths.some((p) => p.startsWith(folder)), `the full bundle holds ${folder}`);
      assert.ok(!minimalPaths.some((p) => p.startsWith(folder)), `the minimal bundle holds ${folder}`);
    }
    // Of plugins/, exactly the two backends, their preset and the catalog of names.
    const pluginFiles = minimalPaths.filter((p) => p.startsWith('plugins/'));
    const allowed = ['plugins/backends/host/', 'plugins/backends/backend/', 'plugins/presets/minimal.ts', 'plugins/presets/catalog.ts'];
    assert.deepEqual(pluginFiles.filter((p) => !allowed.some((a) => p.startsWith(a))), []);
    assert.ok(pluginFiles.includes('plugins/backends/host/plugin.ts'));
    // The vendored Envoy protos go only with the plugins that read them.
    assert.ok(existsSync(join(full, 'envoy-protos/envoy/service/auth/v3/external_auth.proto')));
    assert.ok(!existsSync(join(minimal, 'envoy-protos')));
  });

  it('`plugins` lists exactly the minimal preset, as plain JavaScript', async () => {
    const r = await run([...NODE_ARGS, join(minimal, 'switchyard.mjs'), 'plugins']);
    assert.equal(r.code, 0, r.stderr);
    const rows = r.stdout.trim().split('\n').slice(1).map((line) => line.split(/\s+/).slice(0, 2).join(' '));
    assert.deepEqual(rows, minimalPreset.map((p) => `${p.kind} ${p.key}`));
    const version = await run([...NODE_ARGS, join(minimal, 'switchyard.mjs'), '--version']);
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    assert.equal(version.stdout, `switchyard ${pkg.version}\n`);
  });

  it('switchyard.mjs has a shebang, is executable and runs by its own name (issue 9)', async () => {
    const entry = join(minimal, 'switchyard.mjs');
    assert.ok(readFileSync(entry, 'utf8').startsWith('#!/usr/bin/env node\n'), 'the first line is the shebang');
    assert.ok((statSync(entry).mode & 0o111) !== 0, 'the file is executable');
    // `env node` finds the Node running this test first on PATH.
    const env = { ...ENV, PATH: `${dirname(process.execPath)}${delimiter}${ENV.PATH ?? ''}` };
    const r = await new Promise<Run>((done) => {
      execFile(entry, ['--version'], { cwd: minimal, env, timeout: 30_000 }, (err, stdout, stderr) => {
        done({ code: err ? ((err as { code?: number }).code ?? null) : 0, stdout, stderr });
      });
    });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^switchyard \d+\.\d+\.\d+/);
    // On a Node older than engines.node (the system Node 20 here): one line, exit 1.
    const old = findOldNode();
    if (old) {
      const onOld = await new Promise<Run>((done) => {
        execFile(old.path, [entry, '--version'], { cwd: minimal, env: ENV, timeout: 30_000 }, (err, stdout, stderr) => {
          done({ code: err ? ((err as { code?: number }).code ?? null) : 0, stdout, stderr });
        });
      });
      assert.equal(onOld.code, 1, onOld.stderr);
      assert.match(onOld.stderr, new RegExp(`^switchyard: needs Node\\.js >=[\\d.]+, found ${old.version.replace(/\./g, '\\.')}\n$`));
    }
  });

  // The floor is the bundled packages' (ADR 0146): the launcher checks the one its package.json names, not the clone's.
  it("the launcher checks the engines.node of the distribution's package.json (the bundled packages' floor)", async () => {
    const file = join(minimal, 'package.json');
    const text = readFileSync(file, 'utf8');
    const pkg = JSON.parse(text) as { engines: { node: string } };
    assert.match(pkg.engines.node, /^>=\d+\.\d+(\.\d+)?$/);
    try {
      writeFileSync(file, JSON.stringify({ ...pkg, engines: { ...pkg.engines, node: '>=99.1.0' } }));
      const r = await run([...NODE_ARGS, join(minimal, 'switchyard.mjs'), '--version']);
      assert.equal(r.code, 1, r.stdout);
      assert.equal(r.stderr, `switchyard: needs Node.js >=99.1.0, found ${process.version}\n`);
    } finally {
      writeFileSync(file, text);
    }
  });

  describe('the minimal bundle as a gateway', () => {
    let upstream: TestUpstream;
    before(async () => {
      upstream = await startUpstream();
    });
    after(async () => {
      await upstream?.close();
    });

    it('proxies a request to a `host` backend end to end', async () => {
      const port = await freePort();
      const file = join(tmp, 'host.yaml');
      writeFileSync(
        file,
        stringify({
          config: { adminAddr: 'off', statsAddr: 'off', readinessAddr: 'off' },
          binds: [{ port, listeners: [{ routes: [{ backends: [{ host: `127.0.0.1:${upstream.port}` }] }] }] }],
        }),
      );
      const gw = await startBundle(join(minimal, 'switchyard.mjs'), file);
      try {
        const res = await fetch(`http://127.0.0.1:${port}/through/the/bundle?x=1`, { method: 'POST', body: 'hello' });
        assert.equal(res.status, 200);
        assert.equal(res.headers.get('x-upstream'), 'yes');
        const echoed = (await res.json()) as { method: string; url: string; bodyLength: number };
        assert.deepEqual([echoed.method, echoed.url, echoed.bodyLength], ['POST', '/through/the/bundle?x=1', 5]);
        assert.equal(upstream.received.length, 1);
      } finally {
        assert.equal(await stop(gw), 0, gw.output());
      }
      assert.match(gw.output(), /switchyard stopped/);
    });

    it("checks an admin UI paste on the bundle's own thread (ADR 0172): problems worded, the gateway serving", async () => {
      const [port, admin] = [await freePort(), await freePort()];
      const file = join(tmp, 'paste.yaml');
      writeFileSync(
        file,
        stringify({
          config: { adminAddr: `127.0.0.1:${admin}`, statsAddr: 'off', readinessAddr: 'off' },
          binds: [{ port, listeners: [{ routes: [{ backends: [{ host: `127.0.0.1:${upstream.port}` }] }] }] }],
        }),
      );
      const gw = await startBundle(join(minimal, 'switchyard.mjs'), file);
      try {
        const text = 'binds: [{port: 8080, listeners: [{routes: [{backends: [{hots: "127.0.0.1:1"}]}]}]}]';
        const res = await fetch(`http://127.0.0.1:${admin}/ui/api/validate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text }) });
        const answer = (await res.json()) as { ok: boolean; errors: { message: string }[] };
        assert.equal(answer.ok, false, JSON.stringify(answer));
        assert.match(answer.errors[0]!.message, /did you mean `host`\?/);
        assert.equal((await fetch(`http://127.0.0.1:${port}/`)).status, 200);
      } finally {
        assert.equal(await stop(gw), 0, gw.output());
      }
    });

    it('refuses a config with a left-out first-party key: "not installed in this distribution", exit 1', async () => {
      const file = join(tmp, 'mcp.yaml');
      writeFileSync(
        file,
        stringify({
          config: { adminAddr: 'off', statsAddr: 'off', readinessAddr: 'off' },
          binds: [{ port: await freePort(), listeners: [{ routes: [{ backends: [{ mcp: { targets: [{ name: 't', mcp: { host: 'http://127.0.0.1:1/mcp' } }] } }] }] }] }],
        }),
      );
      const r = await run([...NODE_ARGS, join(minimal, 'switchyard.mjs'), '-f', file]);
      assert.equal(r.code, 1, r.stdout + r.stderr);
      assert.match(r.stderr, /`mcp` is not installed in this distribution; it comes with the full distribution \(the `switchyard` package\), or add its plugin to a trimmed build.s preset \(`npm run build:dist -- --preset NAME`\) \(at binds\[0\]\.listeners\[0\]\.routes\[0\]\.backends\[0\]\.mcp\) \[SWY_ERR_CONFIG_NOT_INSTALLED\]/);
    });

    it('`init` writes a starter config of the installed plugins only, which the bundle loads and serves', async () => {
      // The full starter answers /hello with `directResponse`, which `minimal` leaves out: it failed to load.
      const dir = join(tmp, 'init');
      mkdirSync(dir);
      const written = await run([...NODE_ARGS, join(minimal, 'switchyard.mjs'), 'init'], { cwd: dir });
      assert.equal(written.code, 0, written.stderr);
      const text = readFileSync(join(dir, 'switchyard.yaml'), 'utf8');
      assert.doesNotMatch(text, /directResponse|responseHeaderModifier/);
      const valid = await run([...NODE_ARGS, join(minimal, 'switchyard.mjs'), '--validate-only', '-f', 'switchyard.yaml'], { cwd: dir });
      assert.equal(valid.code, 0, valid.stdout + valid.stderr);
      // Its route proxies to the user's service on 127.0.0.1:3001 (here the test upstream, on ports of its own).
      const port = await freePort();
      const file = join(dir, 'ports.yaml');
      writeFileSync(file, text.replace('port: 3000', `port: ${port}`).replaceAll('127.0.0.1:3001', `127.0.0.1:${upstream.port}`).replace(/127\.0\.0\.1:150\d\d/g, 'off'));
      const gw = await startBundle(join(minimal, 'switchyard.mjs'), file);
      try {
        const res = await fetch(`http://127.0.0.1:${port}/api/anything`);
        assert.equal(res.status, 200);
        assert.equal(res.headers.get('x-upstream'), 'yes');
      } finally {
        assert.equal(await stop(gw), 0, gw.output());
      }
    });

    it('loads a third-party plugin that imports `switchyard/sdk` from the distribution', async () => {
      // An app folder: node_modules/switchyard is the distribution, the example plugin package is installed beside it.
      const app = join(tmp, 'app');
      mkdirSync(join(app, 'node_modules'), { recursive: true });
      cpSync(minimal, join(app, 'node_modules/switchyard'), { recursive: true });
      cpSync(join(ROOT, 'examples/plugins/switchyard-plugin-example'), join(app, 'node_modules/switchyard-plugin-example'), { recursive: true });
      writeFileSync(join(app, 'config.yaml'), stringify({ config: { plugins: ['switchyard-plugin-example'] } }));
      const r = await run([...NODE_ARGS, join(app, 'node_modules/switchyard/switchyard.mjs'), 'plugins', '-f', join(app, 'config.yaml')]);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /^policy\s+addRequestId\s+switchyard-plugin-example@/m);
    });
  });

  it('exports the slot modules of the slots its plugins declare, for third-party guards, providers and transports (ADR 0144)', async () => {
    const exportsOf = (out: string): Record<string, string> => (JSON.parse(readFileSync(join(out, 'package.json'), 'utf8')) as { exports: Record<string, string> }).exports;
    assert.deepEqual(Object.keys(exportsOf(minimal)).sort(), ['./package.json', './sdk']);
    const fullExports = exportsOf(full);
    for (const slots of ['ai', 'mcp', 'backend-auth']) {
      assert.equal(fullExports[`./slots/${slots}`], `./slots/${slots}.mjs`);
      assert.ok(existsSync(join(full, `slots/${slots}.mjs`)), `slots/${slots}.mjs`);
    }
    // A guard package (defineGuard from switchyard/slots/ai) installed beside the full distribution loads from it.
    const app = join(tmp, 'guard-app');
    mkdirSync(join(app, 'node_modules/acme-guard'), { recursive: true });
    cpSync(full, join(app, 'node_modules/switchyard'), { recursive: true });
    writeFileSync(join(app, 'node_modules/acme-guard/package.json'), JSON.stringify({ name: 'acme-guard', version: '1.0.0', type: 'module', exports: './index.js' }));
    writeFileSync(
      join(app, 'node_modules/acme-guard/index.js'),
      "import { defineGuard } from 'switchyard/slots/ai';\nexport default defineGuard({ key: 'acmeQuiet', description: 'x', schema: { type: 'object', additionalProperties: false, properties: {} }, compile: () => ({ check: () => ({ action: 'pass' }) }) });\n",
    );
    writeFileSync(join(app, 'config.yaml'), stringify({ config: { plugins: ['acme-guard'] } }));
    const r = await run([...NODE_ARGS, join(app, 'node_modules/switchyard/switchyard.mjs'), 'plugins', '-f', join(app, 'config.yaml')]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^guard\s+acmeQuiet\s+acme-guard@1\.0\.0/m);
    // Beside `minimal` (no `ai`) it cannot load: the error is at its config.plugins entry and says why, not only
    // Node's "Package subpath './slots/ai' is not defined".
    rmSync(join(app, 'node_modules/switchyard'), { recursive: true });
    cpSync(minimal, join(app, 'node_modules/switchyard'), { recursive: true });
    const refused = await run([...NODE_ARGS, join(app, 'node_modules/switchyard/switchyard.mjs'), '--validate-only', '-f', join(app, 'config.yaml')]);
    assert.equal(refused.code, 1, refused.stderr);
    assert.ok(refused.stderr.includes(`${join(app, 'config.yaml')}:3:7: plugin module \`acme-guard\` failed to load: Package subpath './slots/ai'`), refused.stderr);
    assert.match(refused.stderr, /this distribution has no `switchyard\/slots\/ai`: the package fills a slot of a first-party plugin it leaves out; use a distribution with that plugin, such as the full one\) \(at config\.plugins\[0\]\) \[SWY_ERR_PLUGIN_LOAD\]/);
  });

  it('the full bundle prints the committed schema (schemas/switchyard.schema.json)', async () => {
    const expected = readFileSync(join(ROOT, 'schemas/switchyard.schema.json'), 'utf8');
    const r = await run([...NODE_ARGS, join(full, 'switchyard.mjs'), 'schema']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, expected);
    assert.equal(readFileSync(join(full, 'switchyard.schema.json'), 'utf8'), expected);
  });

  it("a team's preset with its own plugin package bundles the one SDK of the kernel, not the package's switchyard copy", async () => {
    // A plugin package as a team has it checked out: its own node_modules/switchyard (the published package, here a
    // stand-in that re-exports the SDK and carries a marker). Bundled as it was, the distribution held two SDKs.
    const team = join(tmp, 'team');
    const own = join(team, 'acme-plugins/node_modules/switchyard');
    mkdirSync(own, { recursive: true });
    writeFileSync(join(own, 'package.json'), JSON.stringify({ name: 'switchyard', version: '0.0.1', type: 'module', exports: { './sdk': './sdk.js' } }));
    writeFileSync(join(own, 'sdk.js'), `export * from ${JSON.stringify(join(ROOT, 'kernel/sdk/index.ts'))};\nglobalThis.standIn = 'a-second-switchyard-sdk';\n`);
    writeFileSync(join(team, 'acme-plugins/package.json'), JSON.stringify({ name: 'acme-plugins', version: '1.0.0', type: 'module', exports: './index.js' }));
    writeFileSync(
      join(team, 'acme-plugins/index.js'),
      "import { definePolicy } from 'switchyard/sdk';\nexport default definePolicy({ key: 'acmeStamp', description: 'x', schema: { type: 'object', additionalProperties: false, properties: {} }, attach: ['routePolicies'], phase: 'mutate', order: 1, compile: () => ({ onRequest(ex) { ex.headers['x-stamp'] = 'acme'; } }) });\n",
    );
    writeFileSync(
      join(team, 'preset.ts'),
      `import host from ${JSON.stringify(join(ROOT, 'plugins/backends/host/plugin.ts'))};\nimport acme from './acme-plugins/index.js';\nexport default [host, acme];\n`,
    );
    const built = await run(['bin/build-dist.ts', '--preset', join(team, 'preset.ts'), '--out', join(team, 'dist')], { timeout: BUILD_TIMEOUT_MS });
    assert.equal(built.code, 0, built.stderr);
    assert.doesNotMatch(built.stdout, /bundled packages: .*\bswitchyard\b/);
    assert.ok(!bundleText(join(team, 'dist')).includes('a-second-switchyard-sdk'), 'the stand-in SDK is not in the bundle');
    const listed = await run([...NODE_ARGS, join(team, 'dist/switchyard.mjs'), 'plugins']);
    assert.equal(listed.code, 0, listed.stderr);
    assert.match(listed.stdout, /^policy\s+acmeStamp\s/m);
  });

  describe('the full bundle as a gateway', () => {
    let upstream: TestUpstream;
    let envoy: TestEnvoyServer;
    before(async () => {
      upstream = await startUpstream();
      envoy = await startEnvoyServer({ Check: (req) => ({ status: { code: req.attributes.request.http.path === '/deny' ? 7 : 0 } }) });
    });
    after(async () => {
      await upstream?.close();
      await envoy?.stop();
    });

    it('runs extAuthz over gRPC with the Envoy protos copied beside its chunk', async () => {
      const port = await freePort();
      const file = join(tmp, 'ext-authz.yaml');
      writeFileSync(
        file,
        stringify({
          config: { adminAddr: 'off', statsAddr: 'off', readinessAddr: 'off' },
          binds: [{ port, listeners: [{ routes: [{ policies: { extAuthz: { host: envoy.address } }, backends: [{ host: `127.0.0.1:${upstream.port}` }] }] }] }],
        }),
      );
      const gw = await startBundle(join(full, 'switchyard.mjs'), file);
      try {
        const allowed = await fetch(`http://127.0.0.1:${port}/allow`);
        assert.equal(allowed.status, 200);
        await allowed.arrayBuffer();
        const denied = await fetch(`http://127.0.0.1:${port}/deny`);
        assert.equal(denied.status, 403);
        await denied.arrayBuffer();
        assert.equal(envoy.checks.length, 2);
      } finally {
        assert.equal(await stop(gw), 0, gw.output());
      }
    });
  });
});
