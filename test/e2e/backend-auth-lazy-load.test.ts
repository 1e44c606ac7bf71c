// The cloud credential libraries are loaded only by the backendAuth variant that needs them, and only when a config
// uses it (ARCHITECTURE.md §2, §9): installing the plugins costs nothing until then. Each case runs in a fresh Node
// process that records every package module resolution (module.registerHooks sees both import and require).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { dirname, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = pathToFileURL(`${resolve(dirname(fileURLToPath(import.meta.url)), '../..')}/`).href;
const HEAVY = [
  'google-auth-library',
  'gcp-metadata',
  'gaxios',
  '@azure/identity',
  '@azure/msal-node',
  '@smithy/signature-v4',
  '@aws-crypto/sha256-js',
  '@aws-sdk/credential-provider-node',
];

const CHILD = `
import { registerHooks } from 'node:module';
const seen = new Set();
registerHooks({
  resolve(specifier, context, next) {
    const r = next(specifier, context);
    const m = /\\/node_modules\\/((?:@[^/]+\\/)?[^/]+)\\//.exec(r.url);
    if (m) seen.add(m[1]);
    return r;
  },
});
const [root, variant] = process.argv.slice(1);
const load = (p) => import(new URL(p, root)).then((m) => m.default);
// Imported first: their plugin.ts files must load no cloud library either; the full preset compiles through them.
await Promise.all([
  'plugins/policies/backend-auth/plugin.ts',
  'plugins/backend-auth/passthrough/plugin.ts',
  'plugins/backend-auth/key/plugin.ts',
  'plugins/backend-auth/gcp/plugin.ts',
  'plugins/backend-auth/aws/plugin.ts',
  'plugins/backend-auth/azure/plugin.ts',
].map(load));
const { fullPreset } = await import(new URL('plugins/presets/full.ts', root));
const { createGateway, LogSink } = await import(new URL('kernel/index.ts', root));
if (variant !== 'none') {
  const text = [
    'binds:',
    '- port: 3999',
    '  listeners:',
    '  - routes:',
    '    - policies:',
    '        backendAuth: ' + variant,
    '      backends: [{ host: 127.0.0.1:9 }]',
  ].join('\\n');
  const gateway = createGateway({ preset: fullPreset, config: { text, name: 'lazy.yaml' }, watch: false }, new LogSink(() => {}));
  const snapshot = await gateway.compile(text);
  snapshot.dispose?.();
}
process.stdout.write(JSON.stringify([...seen]));
`;

function loadedBy(variant: string): string[] {
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', CHILD, ROOT, variant], { encoding: 'utf8', env: { ...process.env, NODE_OPTIONS: '' } });
  return (JSON.parse(out) as string[]).filter((p) => HEAVY.includes(p)).sort();
}

describe('backendAuth: cloud libraries load lazily', () => {
  it('importing every backendAuth plugin loads none of them', () => {
    assert.deepEqual(loadedBy('none'), []);
  });

  it('a config using `key` or `passthrough` loads none of them', () => {
    assert.deepEqual(loadedBy('{ key: sk-test }'), []);
    assert.deepEqual(loadedBy('{ passthrough: {} }'), []);
  });

  it('`aws` with explicit keys loads the signer only; without keys, the credential chain too', () => {
    assert.deepEqual(loadedBy('{ aws: { accessKeyId: AK, secretAccessKey: SK, region: us-east-1, serviceName: s3 } }'), ['@aws-crypto/sha256-js', '@smithy/signature-v4']);
    assert.deepEqual(loadedBy('{ aws: { region: us-east-1 } }'), ['@aws-crypto/sha256-js', '@aws-sdk/credential-provider-node', '@smithy/signature-v4']);
  });

  it('`gcp` loads google-auth-library, `azure` loads @azure/identity, and neither loads the other', () => {
    const gcp = loadedBy('{ gcp: {} }');
    assert.ok(gcp.includes('google-auth-library'));
    assert.ok(!gcp.some((p) => p.startsWith('@azure/') || p.startsWith('@aws') || p.startsWith('@smithy/')), gcp.join(', '));
    const azure = loadedBy('{ azure: { developerImplicit: {} } }');
    assert.ok(azure.includes('@azure/identity'));
    assert.ok(!azure.some((p) => p.startsWith('@aws') || p.startsWith('@smithy/') || p === 'google-auth-library'), azure.join(', '));
  });
});
