// What the CLI loads to serve the quickstart (the full preset): the libraries a config does not use stay unloaded,
// so they cost neither start time nor idle memory (docs/perf.md "Startup", docs/adr/0034). The real CLI runs on
// free ports with a module hook that lists every module it loaded; a request is proxied through the `api` route
// (a cleartext upstream: the direct forward's lean client) before the list is taken.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { createRequire, registerHooks } from 'node:module';
import { join, relative } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { childEnv, startCli } from '../helpers/cli-process.ts';
import type { RunningCli } from '../helpers/cli-process.ts';
import { BIN, ROOT } from '../helpers/cli.ts';
import { freePort } from '../helpers/ports.ts';
import { testTempDir } from '../helpers/temp-dir.ts';

/** Preloaded into the CLI: records each module URL it loads and Node's internal modules, written at exit. */
const HOOK = `
import { createRequire, registerHooks } from 'node:module';
import { writeFileSync } from 'node:fs';
const urls = [];
registerHooks({ load(url, context, next) { urls.push(url); return next(url, context); } });
process.on('exit', () => writeFileSync(process.env.STARTUP_IMPORTS_OUT, JSON.stringify({ urls, builtins: process.moduleLoadList })));
`;

/** Starts the CLI on the quickstart (free ports) with the hook, proxies one request, stops it: what it loaded. */
async function runQuickstart(dir: string, cacheDir: string, beforeStop?: () => Promise<void>): Promise<{ loaded: { urls: string[]; builtins: string[] }; proxied: { status: number; body: string } }> {
  const hook = join(dir, 'hook.mjs');
  writeFileSync(hook, HOOK);
  const ports = new Map<number, number>();
  for (const p of [3000, 3001, 15000, 15020, 15021]) ports.set(p, await freePort());
  const text = readFileSync(join(ROOT, 'examples/quickstart.yaml'), 'utf8').replace(/\b(3000|3001|15000|15020|15021)\b/g, (m) => String(ports.get(Number(m))));
  const config = join(dir, 'quickstart.yaml');
  writeFileSync(config, text);
  const out = join(dir, 'loaded.json');
  let cli: RunningCli | undefined;
  let proxied: { status: number; body: string };
  try {
    cli = await startCli(process.execPath, [`--import=${pathToFileURL(hook).href}`, BIN, '-f', config], {
      cwd: ROOT,
      env: childEnv({ STARTUP_IMPORTS_OUT: out, NODE_DISABLE_COMPILE_CACHE: '1', SWITCHYARD_CACHE_DIR: cacheDir }),
    });
    const res = await fetch(`http://127.0.0.1:${ports.get(3000)}/api/anything`);
    proxied = { status: res.status, body: await res.text() };
    await beforeStop?.();
  } finally {
    await cli?.stop();
  }
  return { loaded: JSON.parse(readFileSync(out, 'utf8')) as { urls: string[]; builtins: string[] }, proxied };
}

describe('modules the CLI loads for the quickstart', { skip: typeof registerHooks !== 'function' && 'module.registerHooks needs Node 22.15+' }, () => {
  let dir: string;
  let loaded: { urls: string[]; builtins: string[] };
  let proxied: { status: number; body: string };
  /** The second start, with the validator its first start precompiled (ADR 0042). */
  let second: { urls: string[]; builtins: string[] };

  before(async () => {
    dir = testTempDir('switchyard-startup-imports-');
    const cacheDir = join(dir, 'validators');
    // The first start validates with ajv and writes the precompiled validator shortly after (STORE_DELAY_MS).
    ({ loaded, proxied } = await runQuickstart(dir, cacheDir, async () => {
      for (let i = 0; i < 300 && !(existsSync(cacheDir) && readdirSync(cacheDir).some((f) => f.endsWith('.cjs'))); i++) await sleep(100);
    }));
    second = (await runQuickstart(dir, cacheDir)).loaded;
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('a first start validates with ajv; the next loads its precompiled validator and no ajv (ADR 0042)', () => {
    assert.ok(npm('ajv/dist/2020.js'), 'the first start loads ajv');
    const ajvModules = second.urls.filter((u) => u.includes('/node_modules/ajv/')).map((u) => u.slice(u.indexOf('/node_modules/') + 14));
    assert.deepEqual(ajvModules.filter((m) => !m.startsWith('ajv/dist/runtime/') && m !== 'ajv/package.json'), [], 'only its runtime helpers and its version');
    assert.equal(second.urls.some((u) => u.includes('/node_modules/fast-uri/')), false);
    assert.ok(second.urls.some((u) => u.endsWith('.cjs') && u.includes('/validators/')), 'the precompiled validator was loaded');
  });

  const npm = (pkgFile: string): boolean => loaded.urls.some((u) => u.includes(`/node_modules/${pkgFile}`));

  it("proxies without loading undici's client: a cleartext route is the lean client's (ADR 0073, 0079)", () => {
    assert.equal(proxied.status, 200);
    assert.equal(proxied.body, '{"upstream":"ok"}\n');
    assert.ok(npm('undici/lib/core/util.js'), "undici's utilities are the kernel's");
    for (const m of ['undici/lib/dispatcher/pool.js', 'undici/lib/dispatcher/client.js', 'undici/lib/dispatcher/client-h2.js', 'undici/lib/core/connect.js', 'undici/lib/api/api-request.js']) {
      assert.equal(npm(m), false, `${m} loaded`);
    }
    assert.equal(loaded.builtins.includes('NativeModule http2'), false, 'node:http2 loaded');
  });

  it("loads neither undici's index (fetch, WebSocket, mocks, caches) nor its web modules", () => {
    assert.equal(npm('undici/index.js'), false);
    assert.equal(npm('undici/lib/web/'), false);
  });

  it("does not load Node's bundled undici (an ES import of node:http or globalThis.Headers would)", () => {
    assert.equal(loaded.builtins.some((m) => m.includes('internal/deps/undici')), false);
  });

  it('loads neither the positioned YAML parser nor the CEL engine: the quickstart has no ${VAR}, no error, no expression', () => {
    assert.equal(npm('yaml/'), false);
    assert.equal(npm('@marcbachmann/cel-js/'), false);
  });

  it('loads no OpenTelemetry module (API, SDK, exporters): the quickstart has no `config.tracing` (ADR 0037)', () => {
    assert.equal(npm('@opentelemetry/'), false);
    assert.equal(loaded.urls.some((u) => u.includes('/kernel/telemetry/tracing.ts')), false);
  });

  it('loads no DI container, and neither the supervisor of worker threads nor the keys command (ADR 0042)', () => {
    assert.equal(npm('tsyringe/'), false);
    assert.equal(npm('reflect-metadata/'), false);
    const kernel = (file: string): boolean => loaded.urls.some((u) => u.endsWith(`/kernel/${file}`));
    assert.ok(kernel('boot/worker-count.ts'), 'the worker count is read (the hook sees kernel modules)');
    for (const file of ['boot/supervisor.ts', 'boot/worker-protocol.ts', 'telemetry/merge-metrics.ts', 'boot/keys-cli.ts']) {
      assert.equal(kernel(file), false, `${file} loaded`);
    }
  });

  it('loads neither node:tls, node:https, node:worker_threads nor WebCrypto: a cleartext gateway without workers needs none (docs/perf.md "Memory, session 10b")', () => {
    const builtins = new Set(loaded.builtins.filter((m) => m.startsWith('NativeModule ')).map((m) => m.slice('NativeModule '.length)));
    assert.ok(builtins.has('http') && builtins.has('net'), 'the list holds the built-ins the gateway serves with');
    for (const m of ['tls', 'internal/tls/wrap', 'https', 'worker_threads', 'internal/worker', 'internal/crypto/webcrypto']) {
      assert.equal(builtins.has(m), false, `node:${m} loaded`);
    }
  });

  it('every module of its own it loads, the precompiled validator included, is Latin-1 text (docs/perf.md "Memory, session 11")', () => {
    // V8 keeps each module's source in the heap for the process's life, one byte per character, or two for the whole
    // file once one character is beyond U+00FF: one ellipsis in a comment doubles that file's share of the old space.
    // (JSON modules are parsed, not kept.)
    // In comments write `...`, `->`, `<=`; in strings a `\u2026` escape keeps the value.
    const own = [...loaded.urls, ...second.urls].filter((u) => u.startsWith('file:') && !u.endsWith('.json') && (!u.includes('/node_modules/') || u.endsWith('.cjs')));
    assert.ok(own.some((u) => u.endsWith('/kernel/boot/gateway.ts')), 'the list holds the kernel');
    assert.ok(own.some((u) => u.endsWith('.cjs') && u.includes('/validators/')), 'and the precompiled validator');
    const wide = [...new Set(own)].flatMap((u) => {
      const text = readFileSync(new URL(u), 'utf8');
      const at = text.search(/[^\u0000-\u00ff]/u);
      return at < 0 ? [] : [`${relative(ROOT, fileURLToPath(u))}:${text.slice(0, at).split('\n').length}: ${JSON.stringify(text[at])}`];
    });
    assert.deepEqual(wide, []);
  });

  it('every source under kernel/ and plugins/ is Latin-1 text: some config loads each of them (the test above sees one config)', () => {
    const sources = (dir: string): string[] =>
      readdirSync(join(ROOT, dir), { recursive: true, encoding: 'utf8' })
        .filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'))
        .map((f) => join(dir, f));
    const wide = [...sources('kernel'), ...sources('plugins')].flatMap((file) => {
      const text = readFileSync(join(ROOT, file), 'utf8');
      const at = text.search(/[^\u0000-\u00ff]/u);
      return at < 0 ? [] : [`${file}:${text.slice(0, at).split('\n').length}: ${JSON.stringify(text[at])}`];
    });
    assert.deepEqual(wide, []);
  });

  it("undici-core's modules are the ones undici's index exports", async () => {
    const core = await import('../../kernel/upstream/undici-core.ts');
    const undici = await import('undici');
    assert.equal(core.undiciClient().Pool, undici.Pool);
    assert.equal(core.undiciClient().buildConnector, undici.buildConnector);
    // The utilities the kernel imports and the ones the lazily required client uses are one module (its symbols).
    assert.equal(core.destroyStream, createRequire(import.meta.url)('undici/lib/core/util.js').destroy);
  });
});
