import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import { ConfigLoadError, createGateway, LogSink, PluginRegistryError } from 'switchyard';
import { fullPreset } from '../../plugins/presets/full.ts';
import { FIRST_PARTY_KEYS } from '../../plugins/presets/catalog.ts';
import { tempDirs, yaml } from './helpers.ts';

// Third-party plugins come from the static `config.plugins` list (ARCHITECTURE.md §9). Loading failures are
// hard errors that name the package (and, for clashes, both sides).

const FIXTURES = fileURLToPath(new URL('./fixtures/', import.meta.url));

/** Temp dirs made by this file, removed when it ends. */
const tempDir = tempDirs();
const BIN = fileURLToPath(new URL('../../bin/switchyard.js', import.meta.url));

/** A config file in a fresh temp dir loading `plugins`; relative specs resolve from that dir. */
function configWith(plugins: readonly string[], body: readonly string[] = ['binds: []']): { file: string; dir: string; text: string } {
  const dir = tempDir('switchyard-plugins-');
  const file = join(dir, 'config.yaml');
  const text = yaml('config:', '  plugins:', ...plugins.map((p) => `    - ${JSON.stringify(p)}`), ...body);
  writeFileSync(file, text);
  return { file, dir, text };
}

/** Compile through the public API and return the registry error it must raise. */
async function pluginError(plugins: readonly string[]): Promise<{ err: PluginRegistryError; dir: string }> {
  const { file, dir, text } = configWith(plugins);
  const gateway = createGateway({ preset: fullPreset, knownKeys: FIRST_PARTY_KEYS, config: { file }, watch: false, env: {} }, new LogSink(() => undefined));
  try {
    await gateway.compile(text);
  } catch (err) {
    assert.ok(err instanceof PluginRegistryError, `expected a PluginRegistryError, got ${String(err)}`);
    return { err, dir };
  } finally {
    await gateway.stop();
  }
  assert.fail('expected the plugin list to be refused');
}

describe('third-party plugins: loading errors', () => {
  it('a module whose default export is not a plugin names the package', async () => {
    const spec = join(FIXTURES, 'pkg-not-a-plugin');
    const { err } = await pluginError([spec]);
    assert.equal(err.code, 'SWY_ERR_PLUGIN_INVALID');
    assert.equal(
      err.message,
      `swy-fixture-not-a-plugin@1.2.3 (${spec}) does not export a Switchyard plugin (its default export must come from a define* helper of switchyard/sdk)`,
    );
  });

  it('a plugin built for another API version names the plugin, the package and both versions', async () => {
    const spec = join(FIXTURES, 'pkg-future-api');
    const { err } = await pluginError([spec]);
    assert.equal(err.code, 'SWY_ERR_PLUGIN_VERSION');
    assert.equal(err.message, `plugin \`futurePolicy\` from swy-fixture-future-api@2.0.0 (${spec}) targets plugin API v99, but this Switchyard provides v1`);
  });

  it('a plugin claiming a key the distribution already has names both sides', async () => {
    const spec = join(FIXTURES, 'pkg-duplicate-key');
    const { err } = await pluginError([spec]);
    assert.equal(err.code, 'SWY_ERR_PLUGIN_DUPLICATE');
    assert.equal(err.message, `duplicate policy key \`directResponse\`: registered by switchyard and by swy-fixture-duplicate-key@0.4.0 (${spec})`);
  });

  it('the same plugin listed twice is a duplicate too', async () => {
    const spec = join(FIXTURES, 'neutral-alias-plugin.ts');
    const { err } = await pluginError([spec, spec]);
    assert.equal(err.code, 'SWY_ERR_PLUGIN_DUPLICATE');
    assert.match(err.message, /^duplicate policy key `stampHeader`: registered by .+ \(.+neutral-alias-plugin\.ts\) and by .+ \(.+neutral-alias-plugin\.ts\)$/);
  });

  it('a module that cannot be found names the spec and where it was looked up', async () => {
    const { err, dir } = await pluginError(['./no-such-plugin.ts']);
    assert.equal(err.code, 'SWY_ERR_PLUGIN_LOAD');
    assert.match(err.message, /^cannot find plugin module `\.\/no-such-plugin\.ts` from /);
    assert.ok(err.message.includes(dir), err.message);
  });

  it('a package name that is not installed', async () => {
    const { err } = await pluginError(['switchyard-plugin-that-does-not-exist']);
    assert.equal(err.code, 'SWY_ERR_PLUGIN_LOAD');
    assert.match(err.message, /^cannot find plugin module `switchyard-plugin-that-does-not-exist` from /);
  });

  it('a package that is not installed says how to install it, at its place in the file (CLI: file:line:col and frame)', async () => {
    const { err, dir } = await pluginError(['switchyard-plugin-that-does-not-exist']);
    assert.equal(err.module, 'switchyard-plugin-that-does-not-exist');
    assert.ok(err.message.endsWith(`; install it where the config is: \`npm install switchyard-plugin-that-does-not-exist\` in ${dir}`), err.message);
    // The place is the list entry, not the whole file.
    const { file } = configWith([]);
    writeFileSync(file, yaml('# my gateway', 'config:', '  plugins:', '    - switchyard-plugin-that-does-not-exist', 'binds: []'));
    for (const args of [['-f', file], ['schema', '-f', file], ['--validate-only', '-f', file]]) {
      const r = await runCli(args);
      assert.equal(r.code, 1, r.stderr);
      assert.match(r.stderr, /^switchyard: invalid config\n\n/, args.join(' '));
      assert.ok(r.stderr.includes(`${file}:4:7: cannot find plugin module \`switchyard-plugin-that-does-not-exist\``), r.stderr);
      assert.match(r.stderr, /\(at config\.plugins\[0\]\) \[SWY_ERR_PLUGIN_LOAD\]\n.*\n.*\n> 4 \|     - switchyard-plugin-that-does-not-exist/, r.stderr);
    }
  });

  it('a module that throws while loading passes its error on', async () => {
    const spec = join(FIXTURES, 'throws-on-load.ts');
    const { err } = await pluginError([spec]);
    assert.equal(err.code, 'SWY_ERR_PLUGIN_LOAD');
    assert.equal(err.message, `plugin module \`${spec}\` failed to load: plugin init exploded`);
  });

  it('an ES module plugin file under a CommonJS package.json (what `npm init -y` writes) says how to fix it', async () => {
    const err = await commonJsRefusal('my-policy.js', "import { definePolicy } from 'switchyard/sdk';\nexport default definePolicy({});\n");
    assert.match(err.message, /^plugin module `\.\/plugins\/my-policy\.js` failed to load: Cannot use import statement outside a module/);
    assert.match(err.message, /a plugin is an ES module: name the file `\.mjs`, or set "type": "module" in the package\.json nearest to it/);
  });

  // A TypeScript file beside the config (Node strips its types outside node_modules) is read as CommonJS there too:
  // the way out is `.mts`, not the `.mjs` the hint named (renaming it so, types and all, is a syntax error).
  it('a TypeScript plugin file there is told `.mts`', async () => {
    const err = await commonJsRefusal('my-guard.ts', "import { definePolicy } from 'switchyard/sdk';\nconst n: number = 1;\nexport default definePolicy({ n });\n");
    assert.match(err.message, /a plugin is an ES module: name the file `\.mts`, or set "type": "module" in the package\.json nearest to it/);
  });
});

/** What loading `./plugins/<name>` (holding `source`) refuses in a folder whose package.json says `type: commonjs`. */
async function commonJsRefusal(name: string, source: string): Promise<PluginRegistryError> {
  const { file, dir, text } = configWith([`./plugins/${name}`]);
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'my-gateway', type: 'commonjs' }));
  mkdirSync(join(dir, 'plugins'));
  writeFileSync(join(dir, 'plugins', name), source);
  const gateway = createGateway({ preset: fullPreset, knownKeys: FIRST_PARTY_KEYS, config: { file }, watch: false, env: {} }, new LogSink(() => undefined));
  const err = await gateway.compile(text).then(
    () => assert.fail('expected the plugin to be refused'),
    (e: unknown) => e as PluginRegistryError,
  );
  await gateway.stop();
  assert.equal(err.code, 'SWY_ERR_PLUGIN_LOAD');
  return err;
}

/**
 * Compile a config (in a fresh folder whose package.json names the app `acme-gateway@3.0.0`) loading the plugin file
 * `./plugins/<name>.mjs` holding `source`, and return what the compile threw, of the class expected.
 */
async function refusalOf<E extends Error>(expected: new (...args: never[]) => E, name: string, source: string, body: readonly string[]): Promise<E> {
  const { file, dir, text } = configWith([`./plugins/${name}.mjs`], body);
  mkdirSync(join(dir, 'plugins'));
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'acme-gateway', version: '3.0.0', type: 'module' }));
  writeFileSync(join(dir, `plugins/${name}.mjs`), source);
  const gateway = createGateway({ preset: fullPreset, knownKeys: FIRST_PARTY_KEYS, config: { file }, watch: false, env: {} }, new LogSink(() => undefined));
  try {
    return await gateway.compile(text).then(
      () => assert.fail(`expected a ${expected.name}`),
      (e: unknown) => {
        assert.ok(e instanceof expected, `expected a ${expected.name}, got ${String(e)}`);
        return e;
      },
    );
  } finally {
    await gateway.stop();
  }
}

/** The refusal of a plugin file whose policy `key` has `schema`. */
function schemaRefusal(key: string, schema: unknown): Promise<PluginRegistryError> {
  const source = `import { definePolicy } from 'switchyard/sdk';\nexport default definePolicy({ key: '${key}', description: 'x', attach: ['routePolicies'], phase: 'mutate', schema: ${JSON.stringify(schema)}, compile: () => ({}) });\n`;
  return refusalOf(PluginRegistryError, key, source, ['binds: []']);
}

describe('third-party plugins: schemas that are not valid JSON Schema (ADR 0144)', () => {
  const from = (key: string): string => `plugin \`${key}\` from acme-gateway@3.0.0 (./plugins/${key}.mjs) has an invalid schema: `;

  it('a schema the meta-schema refuses names the plugin, its package and where in its schema', async () => {
    const err = await schemaRefusal('badSchema', { type: 'object', properties: { a: { type: 'string', minLength: 'three', description: 'a' } } });
    assert.equal(err.code, 'SWY_ERR_PLUGIN_INVALID');
    assert.ok(err.message.startsWith(from('badSchema')), err.message);
    assert.match(err.message, /\/properties\/a\/minLength must be integer/);
  });

  it('a reference to a definition the schema does not have, as the plugin wrote it', async () => {
    const err = await schemaRefusal('badRef', { type: 'object', properties: { a: { $ref: '#/$defs/nope', description: 'a' } } });
    assert.equal(err.code, 'SWY_ERR_PLUGIN_INVALID');
    assert.ok(err.message.startsWith(from('badRef')), err.message);
    assert.match(err.message, /#\/\$defs\/nope\b/);
    assert.doesNotMatch(err.message, /policy\.badRef/);
  });

  it('an unknown keyword (strict mode) is refused at start, not at the first config that uses the key', async () => {
    const err = await schemaRefusal('unknownKeyword', { type: 'object', properties: { a: { type: 'string', exmaple: 'x', description: 'a' } } });
    assert.equal(err.code, 'SWY_ERR_PLUGIN_INVALID');
    assert.ok(err.message.startsWith(from('unknownKeyword')), err.message);
    assert.match(err.message, /unknown keyword: "exmaple"/);
  });

  it('an `x-slot` no installed plugin declares', async () => {
    const err = await schemaRefusal('badSlot', { type: 'object', properties: { t: { 'x-slot': 'nope', description: 't' } } });
    assert.equal(err.code, 'SWY_ERR_PLUGIN_INVALID');
    assert.equal(err.message, `plugin \`badSlot\` from acme-gateway@3.0.0 (./plugins/badSlot.mjs) refers to slot \`nope\`, which no installed plugin declares`);
  });
});

describe('third-party plugins: manifests a JavaScript plugin gets wrong (ADR 0144)', () => {
  /** The refusal of a plugin file made by `definePolicy` from `manifest` (JavaScript: nothing type-checks it). */
  const refused = (key: string, manifest: string): Promise<PluginRegistryError> =>
    refusalOf(PluginRegistryError, key, `import { definePolicy } from 'switchyard/sdk';\nexport default definePolicy({ key: '${key}', description: 'x', ${manifest} });\n`, ['binds: []']);
  const from = (key: string): string => `plugin \`${key}\` from acme-gateway@3.0.0 (./plugins/${key}.mjs) `;
  const SCHEMA = "schema: { type: 'object' }";
  const COMPILE = 'compile: () => ({})';

  it('a phase that is not one of the phases (its hooks would run in no defined order)', async () => {
    const err = await refused('badPhase', `attach: ['routePolicies'], phase: 'authentication', ${SCHEMA}, ${COMPILE}`);
    assert.equal(err.code, 'SWY_ERR_PLUGIN_INVALID');
    assert.equal(err.message, `${from('badPhase')}has phase \`authentication\`; one of \`ingress\`, \`authn\`, \`authz\`, \`admission\`, \`mutate\`, \`respond\`, \`dispatch\`, \`upstream\``);
  });

  it('an order that is not a number', async () => {
    const err = await refused('badOrder', `attach: ['routePolicies'], phase: 'mutate', order: 'first', ${SCHEMA}, ${COMPILE}`);
    assert.equal(err.message, `${from('badOrder')}has \`order\` "first"; a finite number`);
  });

  it('attach given as a string (the policy was offered nowhere: "unknown policy")', async () => {
    const err = await refused('attachString', `attach: 'routePolicies', phase: 'mutate', ${SCHEMA}, ${COMPILE}`);
    assert.equal(err.message, `${from('attachString')}has \`attach\` "routePolicies"; a list of slot names such as ['routePolicies']`);
  });

  it('a CEL variable the gateway already has is refused, not silently shadowed (ADR 0154)', async () => {
    const own = await refused('celRequest', `attach: ['routePolicies'], phase: 'mutate', celVariables: ['request'], ${SCHEMA}, ${COMPILE}`);
    assert.equal(own.code, 'SWY_ERR_PLUGIN_INVALID');
    assert.equal(own.message, `${from('celRequest')}declares the CEL variable \`request\`, which the gateway itself provides`);
    const published = await refused('celJwt', `attach: ['routePolicies'], phase: 'mutate', celVariables: [{ name: 'jwt', description: 'x' }], ${SCHEMA}, ${COMPILE}`);
    assert.equal(published.code, 'SWY_ERR_PLUGIN_INVALID');
    assert.match(published.message, /^plugin `celJwt` from acme-gateway@3\.0\.0 \(\.\/plugins\/celJwt\.mjs\) declares the CEL variable `jwt`, which plugin `(jwtAuth|mcpAuthentication)` from switchyard publishes$/);
    // A name no expression can write: unreachable, and nothing said so.
    const dashed = await refused('celDashed', `attach: ['routePolicies'], phase: 'mutate', celVariables: ['my-var'], ${SCHEMA}, ${COMPILE}`);
    assert.equal(dashed.message, `${from('celDashed')}declares the CEL variable \`my-var\`, which no expression can name (a CEL identifier that is not a reserved word)`);
    const keyword = await refused('celKeyword', `attach: ['routePolicies'], phase: 'mutate', celVariables: ['true'], ${SCHEMA}, ${COMPILE}`);
    assert.match(keyword.message, /declares the CEL variable `true`, which no expression can name/);
  });

  it('no schema, or no compile function', async () => {
    const noSchema = await refused('noSchema', `attach: ['routePolicies'], phase: 'mutate', ${COMPILE}`);
    assert.equal(noSchema.message, `${from('noSchema')}has no \`schema\` (a JSON Schema object)`);
    const noCompile = await refused('noCompile', `attach: ['routePolicies'], phase: 'mutate', ${SCHEMA}`);
    assert.equal(noCompile.message, `${from('noCompile')}has no \`compile\` function`);
  });
});

describe('third-party plugins: compile() results the kernel cannot use (ADR 0144)', () => {
  const PLUGINS = [
    "import { defineBackend, definePolicy } from 'switchyard/sdk';",
    'const schema = { type: "object", additionalProperties: false, properties: {} };',
    'export default [',
    "  definePolicy({ key: 'returnsNothing', description: 'x', attach: ['routePolicies'], phase: 'mutate', schema, compile: () => undefined }),",
    "  defineBackend({ key: 'noHandle', description: 'x', schema, compile: () => ({ protocol: 'http' }) }),",
    "  definePolicy({ key: 'badDispose', description: 'x', attach: ['routePolicies'], phase: 'mutate', schema, compile: () => ({ dispose() { throw new Error('dispose exploded'); } }) }),",
    "  definePolicy({ key: 'badAsyncDispose', description: 'x', attach: ['routePolicies'], phase: 'mutate', schema, compile: () => ({ async dispose() { throw new Error('async dispose exploded'); } }) }),",
    "  definePolicy({ key: 'throwsInCompile', description: 'x', attach: ['routePolicies'], phase: 'mutate', schema, compile: () => { throw new TypeError('cannot read x of undefined'); } }),",
    "  definePolicy({ key: 'failsInCompile', description: 'x', attach: ['routePolicies'], phase: 'mutate', schema, compile: (c, ctx) => ctx.fail('my own words') }),",
    '];',
  ].join('\n');
  const refusal = async (route: readonly string[]): Promise<string> =>
    (await refusalOf(ConfigLoadError, 'odd', PLUGINS, ['binds:', '  - port: 8080', '    listeners:', '      - routes:', ...route])).message;

  it('a policy whose compile returns nothing is a config error at its key, not a policy silently left out', async () => {
    const message = await refusal(['          - policies:', '              returnsNothing: {}', '            backends: [{ host: 127.0.0.1:9 }]']);
    assert.match(message, /config\.yaml:\d+:\d+: plugin `returnsNothing` from acme-gateway@3\.0\.0 \(\.\/plugins\/odd\.mjs\): compile\(\) returned undefined, not an instance/);
  });

  it('a compile that throws is a config error at its key naming the plugin (was the bare message); ctx.fail keeps its words', async () => {
    const thrown = await refusal(['          - policies:', '              throwsInCompile: {}', '            backends: [{ host: 127.0.0.1:9 }]']);
    assert.match(thrown, /config\.yaml:\d+:\d+: plugin `throwsInCompile` from acme-gateway@3\.0\.0 \(\.\/plugins\/odd\.mjs\): compile\(\) failed: TypeError: cannot read x of undefined \(at binds\[0\]\.listeners\[0\]\.routes\[0\]\.policies\.throwsInCompile\)/);
    const failed = await refusal(['          - policies:', '              failsInCompile: {}', '            backends: [{ host: 127.0.0.1:9 }]']);
    assert.match(failed, /config\.yaml:\d+:\d+: my own words \(at binds\[0\]\.listeners\[0\]\.routes\[0\]\.policies\.failsInCompile\)/);
  });

  it("a config section's resolve() that throws is a config error at the section naming the plugin (was one line, no place)", async () => {
    const level = "{ type: 'object', description: 'x', additionalProperties: false, properties: { level: { type: 'integer', description: 'x' } } }";
    const source = `import { defineConfigSection, definePolicy } from 'switchyard/sdk';
const section = defineConfigSection({ name: 'acmeSettings', schema: ${level}, resolve(raw) { if (raw?.level > 3) throw new Error('level too high'); return raw ?? {}; } });
export default definePolicy({ key: 'acmeSect', description: 'x', schema: { type: 'object', properties: {} }, attach: ['routePolicies'], phase: 'mutate', configSections: [section], compile: () => ({}) });
`;
    const { message } = await refusalOf(ConfigLoadError, 'sect', source, ['  acmeSettings:', '    level: 5', 'binds: []']);
    assert.match(message, /config\.yaml:5:5: plugin `acmeSect` from acme-gateway@3\.0\.0 \(\.\/plugins\/sect\.mjs\): `config\.acmeSettings` failed to resolve: level too high \(at config\.acmeSettings\)/);
  });

  it('an LLM provider instance without `origin` is a config error naming the provider, not a TypeError', async () => {
    const source = [
      "import { defineLlmProvider } from 'switchyard/slots/ai';",
      "export default defineLlmProvider({ key: 'noOrigin', description: 'x', schema: { type: 'object' }, compile: () => ({ kind: 'no', wireFormat: (c) => c, path: () => '/v1/chat/completions', prepareHeaders() {} }) });",
    ].join('\n');
    const body = ['binds:', '  - port: 8080', '    listeners:', '      - routes:', '          - backends:', '              - ai: { name: x, provider: { noOrigin: {} } }'];
    const { message } = await refusalOf(ConfigLoadError, 'provider', source, body);
    assert.match(message, /config\.yaml:\d+:\d+: LLM provider `noOrigin` returned an instance without `origin` \(an `http:\/\/` or `https:\/\/` origin\) \(at binds\[0\]\.listeners\[0\]\.routes\[0\]\.backends\[0\]\.ai\.provider\.noOrigin\)/);
  });

  it("a dispose() that throws while a failed load is undone does not hide the load's config error", async () => {
    const message = await refusal(['          - policies:', '              badDispose: {}', '              directResponse: { status: 204, body: x }']);
    assert.match(message, /config\.yaml:\d+:\d+: .*204.* \(at binds\[0\]\.listeners\[0\]\.routes\[0\]\.policies\.directResponse/);
    assert.doesNotMatch(message, /dispose exploded/);
  });

  it('a dispose() that throws when a snapshot is retired is logged once, naming the plugin (ADR 0154)', async () => {
    const { file, dir, text } = configWith(['./plugins/odd.mjs'], ['binds:', '  - port: 8080', '    listeners:', '      - routes:', '          - policies:', '              badDispose: {}', '              badAsyncDispose: {}', '            backends: [{ host: 127.0.0.1:9 }]']);
    mkdirSync(join(dir, 'plugins'));
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'acme-gateway', version: '3.0.0', type: 'module' }));
    writeFileSync(join(dir, 'plugins/odd.mjs'), PLUGINS);
    const logged: string[] = [];
    const sink = new LogSink((chunk) => logged.push(chunk));
    const gateway = createGateway({ preset: fullPreset, knownKeys: FIRST_PARTY_KEYS, config: { file }, watch: false, env: {} }, sink);
    try {
      const snapshot = await gateway.compile(text);
      snapshot.dispose();
      snapshot.dispose();
      await new Promise((r) => setTimeout(r, 50));
      const lines = logged.join('').split('\n').filter((l) => l.includes('error="dispose exploded"'));
      assert.equal(lines.length, 1, logged.join(''));
      assert.match(lines[0]!, /WARN +plugin dispose failed .*plugin=badDispose package=acme-gateway@3\.0\.0/);
      // An async dispose() that rejects: the same line, not an unhandled rejection.
      const rejected = logged.join('').split('\n').filter((l) => l.includes('async dispose exploded'));
      assert.equal(rejected.length, 1, logged.join(''));
      assert.match(rejected[0]!, /plugin=badAsyncDispose package=acme-gateway@3\.0\.0/);
    } finally {
      await gateway.stop();
    }
  });

  it("an admin endpoint prefix another plugin serves, or the admin address's own, is a config error, not silently unreachable (ADR 0154)", async () => {
    const source = [
      "import { definePolicy } from 'switchyard/sdk';",
      'const schema = { type: "object", additionalProperties: false, properties: { prefix: { type: "string" } } };',
      "const admin = (key) => definePolicy({ key, description: 'x', attach: ['routePolicies'], phase: 'mutate', schema, compile: (c, ctx) => { ctx.adminRoute(c.prefix, () => ({ status: 200, body: {} })); return {}; } });",
      "export default [admin('adminA'), admin('adminB')];",
    ].join('\n');
    const body = (a: string, b: string): string[] => ['binds:', '  - port: 8080', '    listeners:', '      - routes:', '          - policies:', `              adminA: { prefix: ${a} }`, `              adminB: { prefix: ${b} }`, '            backends: [{ host: 127.0.0.1:9 }]'];
    const clash = await refusalOf(ConfigLoadError, 'admin', source, body('/acme', '/acme'));
    assert.match(clash.message, /config\.yaml:\d+:\d+: `\/acme` is already served by plugin `adminA` \(at binds\[0\]\.listeners\[0\]\.routes\[0\]\.policies\.adminB\)/);
    const own = await refusalOf(ConfigLoadError, 'admin', source, body('/ui', '/metrics'));
    assert.match(own.message, /`\/ui` is served by the admin address itself/);
    assert.match(own.message, /`\/metrics` is served by the admin address itself/);
  });

  it('a backend whose instance has no handle() is a config error at its key, not a 500 per request', async () => {
    const message = await refusal(['          - backends: [{ noHandle: {} }]']);
    assert.match(message, /config\.yaml:\d+:\d+: plugin `noHandle` from acme-gateway@3\.0\.0 \(\.\/plugins\/odd\.mjs\): compile\(\) returned a backend instance without `handle`/);
  });
});

/** Run the CLI with `args`; its exit code and output. */
function runCli(args: readonly string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error('the CLI did not exit'));
    }, 20_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

describe('third-party plugins: checks once the whole config is compiled (ctx.afterLoad, ADR 0196)', () => {
  const source = [
    "import { definePolicy, didYouMean } from 'switchyard/sdk';",
    'const schema = { type: "object", additionalProperties: false, properties: { peer: { type: "string" }, mode: { type: "string" } } };',
    'export default definePolicy({ key: \'peerOf\', description: \'x\', attach: [\'routePolicies\'], phase: \'mutate\', schema, compile: (c, ctx) => {',
    '  ctx.afterLoad((load) => {',
    "    if (c.mode === 'throw') throw new TypeError('boom');",
    "    if (c.mode === 'async') return Promise.reject(new Error('late'));",
    '    const names = load.routes.filter((r) => r.policies.includes(\'peerOf\')).map((r) => r.name);',
    "    if (!names.includes(c.peer)) ctx.fail(`no route \\`${c.peer}\\` with peerOf; did you mean \\`${didYouMean(c.peer, names)}\\`?`, ['peer']);",
    '  });',
    '  return {};',
    '} });',
  ].join('\n');
  const body = (a: string, b: string): string[] => ['binds:', '  - port: 8080', '    listeners:', '      - routes:', '          - name: one', `            policies: { peerOf: { ${a} } }`, '            backends: [{ host: 127.0.0.1:9 }]', '          - name: two', `            policies: { peerOf: { ${b} } }`, '            backends: [{ host: 127.0.0.1:9 }]'];

  it('sees every route (one after its own too), fails at the path it names, and a throw or a promise names the plugin', async () => {
    const { file, dir, text } = configWith(['./plugins/peer.mjs'], body('peer: two', 'peer: one'));
    mkdirSync(join(dir, 'plugins'));
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'acme-gateway', version: '3.0.0', type: 'module' }));
    writeFileSync(join(dir, 'plugins/peer.mjs'), source);
    const gateway = createGateway({ preset: fullPreset, knownKeys: FIRST_PARTY_KEYS, config: { file }, watch: false, env: {} }, new LogSink(() => undefined));
    try {
      (await gateway.compile(text)).dispose();
    } finally {
      await gateway.stop();
    }
    const typo = await refusalOf(ConfigLoadError, 'peer', source, body('peer: twoo', 'peer: one'));
    assert.match(typo.message, /config\.yaml:\d+:\d+: no route `twoo` with peerOf; did you mean `two`\? \(at binds\[0\]\.listeners\[0\]\.routes\[0\]\.policies\.peerOf\.peer\)/);
    const thrown = await refusalOf(ConfigLoadError, 'peer', source, body('mode: throw', 'mode: async'));
    assert.match(thrown.message, /plugin `peerOf` from acme-gateway@3\.0\.0: afterLoad check failed: TypeError: boom \(at binds\[0\]\.listeners\[0\]\.routes\[0\]\.policies\.peerOf\)/);
    assert.match(thrown.message, /plugin `peerOf` from acme-gateway@3\.0\.0: an afterLoad check must finish synchronously; it returned a promise \(at binds\[0\]\.listeners\[0\]\.routes\[1\]\.policies\.peerOf\)/);
  });
});

describe('switchyard schema -f with a config it cannot read (ADR 0154)', () => {
  it('a YAML syntax error stops the command with its position, not a schema silently without the config plugins', async () => {
    const { file } = configWith([join(FIXTURES, 'neutral-alias-plugin.ts')], ['binds:', '  - port: 8080', '    listeners: [ {']);
    const r = await runCli(['schema', '-f', file]);
    assert.equal(r.code, 1);
    assert.equal(r.stdout, '');
    assert.match(r.stderr, /^switchyard: invalid config\n\n.*config\.yaml:\d+:\d+: YAML syntax error/);
  });

  it('a readable config still gives the schema with its plugins', async () => {
    const { file } = configWith([join(FIXTURES, 'neutral-alias-plugin.ts')]);
    const r = await runCli(['schema', '-f', file]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /stampHeader/);
  });
});

describe('third-party plugins: loading', () => {
  const route = ['binds:', '  - port: 8080', '    listeners:', '      - routes:', '          - policies:', '              neutralWord: { value: x }'];

  for (const [title, spec] of [
    ['an absolute path', join(FIXTURES, 'neutral-alias-plugin.ts')],
    ['a path relative to the config file', 'REL'],
  ] as const) {
    it(`loads from ${title} and its keys validate`, async () => {
      const dir = tempDir('switchyard-plugins-');
      const resolved = spec === 'REL' ? relative(dir, join(FIXTURES, 'neutral-alias-plugin.ts')) : spec;
      const file = join(dir, 'config.yaml');
      const text = yaml('config:', '  plugins:', `    - ${JSON.stringify(resolved.startsWith('.') || resolved.startsWith('/') ? resolved : `./${resolved}`)}`, ...route);
      writeFileSync(file, text);
      const gateway = createGateway({ preset: fullPreset, knownKeys: FIRST_PARTY_KEYS, config: { file }, watch: false, env: {} }, new LogSink(() => undefined));
      try {
        const snapshot = await gateway.compile(text);
        const policies = (snapshot.config as { binds: { listeners: { routes: { policies: object }[] }[] }[] }).binds[0]!.listeners[0]!.routes[0]!.policies;
        assert.deepEqual(policies, { stampHeader: { value: 'x' } });
        const registered = gateway.pluginRegistry!.lookup('routePolicies', 'neutralWord');
        assert.equal(registered?.plugin.key, 'stampHeader');
        snapshot.dispose();
      } finally {
        await gateway.stop();
      }
    });
  }

  it('the CLI reports a refused plugin with its code and exits 1', async () => {
    const spec = join(FIXTURES, 'pkg-duplicate-key');
    const { file } = configWith([spec]);
    const r = await runCli(['--validate-only', '-f', file]);
    assert.equal(r.code, 1);
    assert.equal(r.stdout, '');
    assert.equal(
      r.stderr,
      `switchyard: duplicate policy key \`directResponse\`: registered by switchyard and by swy-fixture-duplicate-key@0.4.0 (${spec}) [SWY_ERR_PLUGIN_DUPLICATE]\n`,
    );
  });
});
