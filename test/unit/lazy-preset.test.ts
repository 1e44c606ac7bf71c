// The full preset registers every first-party plugin from its generated manifest (docs/adr/0094): a plugin's module
// (`plugin.ts` and what it imports) is loaded only when a config load compiles its key, a reload loading the newly
// used ones. Checked in a fresh process that records every `plugin.ts` Node loads.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { registerHooks } from 'node:module';
import { dirname, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { fullPreset } from '../../plugins/presets/full.ts';
import { firstPartyPlugins } from '../../bin/gen-catalog.ts';
import { lazyPlugin } from '../../plugins/presets/lazy-plugin.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/** Run `body` (module code with `root`, `loaded()` and the gateway helpers in scope) in a fresh process; its stdout as JSON. */
function inFreshProcess(body: string): unknown {
  const child = `
    import { registerHooks } from 'node:module';
    const root = ${JSON.stringify(pathToFileURL(`${ROOT}/`).href)};
    const seen = [];
    registerHooks({
      load(url, context, next) {
        if (url.startsWith(root + 'plugins/') && url.endsWith('/plugin.ts')) seen.push(url.slice(root.length + 'plugins/'.length, -'/plugin.ts'.length));
        return next(url, context);
      },
    });
    const loaded = () => [...seen].sort();
    ${body}
  `;
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', child], { cwd: ROOT, encoding: 'utf8', env: { ...process.env, NODE_DISABLE_COMPILE_CACHE: '1' } });
  return JSON.parse(out);
}

describe('the full preset loads plugin modules on first use', { skip: typeof registerHooks !== 'function' && 'module.registerHooks needs Node 22.15+' }, () => {
  it('importing it loads no plugin.ts', () => {
    const loaded = inFreshProcess(`
      await import(root + 'plugins/presets/full.ts');
      process.stdout.write(JSON.stringify(loaded()));
    `);
    assert.deepEqual(loaded, []);
  });

  it('a config load imports the plugins it uses, a reload the newly used ones, before serving', () => {
    const result = inFreshProcess(`
      const { writeFileSync } = await import('node:fs');
      const { stringify } = await import('yaml');
      const { startGateway } = await import(root + 'test/helpers/gateway.ts');
      const { freePort } = await import(root + 'test/helpers/ports.ts');
      const port = await freePort();
      const route = (policies) => ({ binds: [{ port, listeners: [{ routes: [{ policies, backends: [{ host: '127.0.0.1:9' }] }] }] }] });
      const gw = await startGateway(route({ cors: { allowOrigins: ['*'] } }));
      const first = loaded();
      const preflight = await fetch('http://127.0.0.1:' + port + '/', { method: 'OPTIONS', headers: { origin: 'https://a.example', 'access-control-request-method': 'GET' } });
      const text = stringify({ config: { adminAddr: '127.0.0.1:0', statsAddr: '127.0.0.1:0', readinessAddr: '127.0.0.1:0' }, ...route({ directResponse: { status: 203 } }) });
      writeFileSync(gw.file, text);
      const reloaded = await gw.gateway.reload(text);
      const second = loaded();
      const direct = await fetch('http://127.0.0.1:' + port + '/');
      await gw.stop();
      process.stdout.write(JSON.stringify({ first, preflight: preflight.status, reloaded, second, direct: direct.status }));
    `);
    assert.deepEqual(result, {
      first: ['backends/host', 'policies/cors'],
      preflight: 200,
      reloaded: true,
      second: ['backends/host', 'policies/cors', 'policies/direct-response'],
      direct: 203,
    });
  });

  it('each lazily registered plugin compiles through the module it was generated from', async () => {
    const real = await firstPartyPlugins();
    assert.equal(fullPreset.length, real.length);
    for (const [i, lazy] of fullPreset.entries()) {
      const { plugin, module } = real[i]!;
      // Every field but the code is the module's own (slots and config sections the very same objects).
      const { compile: _lazyCompile, ...lazyManifest } = lazy as unknown as Record<string, unknown>;
      const { compile: _realCompile, ...realManifest } = plugin as unknown as Record<string, unknown>;
      assert.deepEqual(lazyManifest, realManifest, module);
      for (const field of ['slots', 'configSections'] as const) {
        for (const [j, object] of (((realManifest[field] as unknown[]) ?? []).entries())) assert.equal((lazyManifest[field] as unknown[])[j], object, `${module} ${field}[${j}]`);
      }
    }
  });

  it('a manifest that no longer matches its module fails the compile, naming the fix', async () => {
    const stale = lazyPlugin({ key: 'corsRenamed', kind: 'policy' }, () => import('../../plugins/policies/cors/plugin.ts'));
    await assert.rejects(async () => (stale as unknown as { compile(c: unknown, ctx: never): Promise<unknown> }).compile({}, undefined as never), /`corsRenamed`: its module no longer matches plugins\/presets\/full-manifests\.json; run `npm run catalog`/);
  });
});
