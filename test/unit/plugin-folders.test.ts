// One plugin folder shape (issue 10 item 7): plugins/<category>/<folder>/ holds `plugin.ts` (the manifest, default
// export) for the key the folder is named for (kebab-case), the schema in `schema.json` (the manifest's `schema`),
// and the implementation in a module named for the folder. Folders that do not follow it yet are listed below with
// the reason; an entry that is no longer needed fails too, so the list only shrinks.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { Plugin } from 'switchyard/sdk';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CATEGORIES = ['backend-auth', 'backends', 'guards', 'llm-providers', 'mcp-transports', 'policies'];

/** Folders whose schema is not (only) `schema.json`: built in TypeScript from shared parts, or inline in plugin.ts. */
const SCHEMA_EXCEPTIONS: Record<string, string> = {
  'policies/ai': 'schema.ts composes the header-modifier schema of plugins/lib',
  'policies/jwt-auth': 'schema.ts composes the JWT schema of plugins/lib/jwt',
  'policies/mcp-authentication': 'schema.ts composes the JWT schema of plugins/lib/jwt',
  'policies/request-header-modifier': 'inline: the header-modifier schema of plugins/lib',
  'policies/response-header-modifier': 'inline: the header-modifier schema of plugins/lib',
  'policies/request-redirect': 'inline in plugin.ts',
  'policies/url-rewrite': 'inline: the path-rewrite schema of plugins/lib',
};

/** Folders whose implementation module is not named for the folder, each with the reason it stays so. */
const IMPLEMENTATION_EXCEPTIONS: Record<string, string> = {
  'policies/ai': 'ai-policy.ts: `ai` is both a policy and a backend key; the module name says which one it is',
  'backends/ai': 'backend.ts: `ai` is both a policy and a backend key; the module name says which one it is',
  'policies/local-rate-limit': 'one module per concern (token-bucket.ts, llm-tokens.ts, deny.ts); none is the whole implementation',
};

const folders = CATEGORIES.flatMap((c) =>
  readdirSync(join(ROOT, 'plugins', c), { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .map((e) => `${c}/${e.name}`),
);

/** `backendTLS` → `backendtls`, `backend-tls` → `backendtls`: the folder is the key in kebab-case. */
const squash = (name: string): string => name.replace(/-/g, '').toLowerCase();

async function manifestOf(folder: string): Promise<Plugin> {
  const mod = (await import(pathToFileURL(join(ROOT, 'plugins', folder, 'plugin.ts')).href)) as { default: Plugin | Plugin[] };
  const exported = Array.isArray(mod.default) ? mod.default : [mod.default];
  const plugin = exported.find((p) => p.kind !== 'slot');
  assert.ok(plugin, `plugins/${folder}/plugin.ts exports a plugin`);
  return plugin;
}

describe('plugin folder shape', () => {
  it('finds the plugin folders', () => assert.ok(folders.length > 40, `found ${folders.length}`));

  it('every folder has plugin.ts for the key it is named for', async () => {
    const problems: string[] = [];
    for (const folder of folders) {
      if (!existsSync(join(ROOT, 'plugins', folder, 'plugin.ts'))) {
        problems.push(`${folder}: no plugin.ts`);
        continue;
      }
      const plugin = await manifestOf(folder);
      if (squash(plugin.key) !== squash(folder.split('/')[1]!)) problems.push(`${folder}: plugin.ts defines \`${plugin.key}\``);
    }
    assert.deepEqual(problems, []);
  });

  it('the schema is schema.json, the one the manifest uses', async () => {
    const problems: string[] = [];
    for (const folder of folders) {
      const file = join(ROOT, 'plugins', folder, 'schema.json');
      const listed = Object.hasOwn(SCHEMA_EXCEPTIONS, folder);
      if (!existsSync(file)) {
        if (!listed) problems.push(`${folder}: no schema.json`);
        continue;
      }
      if (listed) problems.push(`${folder}: has schema.json now; remove it from SCHEMA_EXCEPTIONS`);
      const plugin = await manifestOf(folder);
      if (plugin.kind !== 'slot') assert.deepEqual(plugin.schema, JSON.parse(readFileSync(file, 'utf8')), `${folder}: the manifest's schema is schema.json`);
    }
    assert.deepEqual(problems, []);
  });

  it('the implementation, when not in plugin.ts, is the module named for the folder', () => {
    const problems: string[] = [];
    for (const folder of folders) {
      const name = folder.split('/')[1]!;
      const modules = readdirSync(join(ROOT, 'plugins', folder)).filter(
        (f) => f.endsWith('.ts') && !f.endsWith('.test.ts') && !f.endsWith('.d.ts') && f !== 'plugin.ts' && f !== 'schema.ts',
      );
      const named = modules.includes(`${name}.ts`);
      const listed = Object.hasOwn(IMPLEMENTATION_EXCEPTIONS, folder);
      if (modules.length > 0 && !named && !listed) problems.push(`${folder}: no ${name}.ts among ${modules.join(', ')}`);
      if (listed && (named || modules.length === 0)) problems.push(`${folder}: follows the shape now; remove it from IMPLEMENTATION_EXCEPTIONS`);
    }
    assert.deepEqual(problems, []);
  });
});
