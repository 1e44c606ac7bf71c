// The committed schema (schemas/switchyard.schema.json) must be what the installed plugins assemble, every
// property of it must be described (editors show the descriptions), and the catalog of first-party keys must
// match the full preset.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { assembleSchema, PluginRegistry } from 'switchyard';
import { FIRST_PARTY_KEYS } from '../../plugins/presets/catalog.ts';
import { generatedFiles } from '../../bin/gen-catalog.ts';
import { fullPreset } from '../../plugins/presets/full.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const SCHEMA_FILE = join(ROOT, 'schemas/switchyard.schema.json');

type Json = Record<string, unknown>;

function fullSchema(): Json {
  const registry = new PluginRegistry();
  for (const plugin of fullPreset) registry.register(plugin, { name: 'switchyard' });
  registry.finalize();
  return assembleSchema(registry);
}

const pointer = (path: readonly (string | number)[]): string => `/${path.map((p) => String(p).replace(/~/g, '~0').replace(/\//g, '~1')).join('/')}`;

/** JSON pointers where two JSON values differ (at most `limit`). */
function differences(a: unknown, b: unknown, path: (string | number)[] = [], out: string[] = [], limit = 20): string[] {
  if (out.length >= limit) return out;
  if (typeof a !== typeof b || Array.isArray(a) !== Array.isArray(b) || a === null || b === null || typeof a !== 'object') {
    if (JSON.stringify(a) !== JSON.stringify(b)) {
      out.push(`${pointer(path)}: committed ${JSON.stringify(a)?.slice(0, 80) ?? 'absent'}, assembled ${JSON.stringify(b)?.slice(0, 80) ?? 'absent'}`);
    }
    return out;
  }
  const ao = a as Record<string, unknown>;
  const bo = b as Record<string, unknown>;
  for (const key of new Set([...Object.keys(ao), ...Object.keys(bo)])) differences(ao[key], bo[key], [...path, key], out, limit);
  return out;
}

describe('schemas/switchyard.schema.json', () => {
  it('is fresh: exactly what `switchyard schema` prints for the full preset', () => {
    let text: string;
    try {
      text = readFileSync(SCHEMA_FILE, 'utf8');
    } catch (err) {
      return assert.fail(`cannot read schemas/switchyard.schema.json (${(err as Error).message}); run \`npm run schema\` and commit the result`);
    }
    const assembled = fullSchema();
    if (text === `${JSON.stringify(assembled, null, 2)}\n`) return;
    let committed: unknown;
    try {
      committed = JSON.parse(text);
    } catch (err) {
      return assert.fail(`schemas/switchyard.schema.json is not JSON (${(err as Error).message}); run \`npm run schema\``);
    }
    const diff = differences(committed, assembled);
    if (diff.length === 0) return assert.fail('schemas/switchyard.schema.json is formatted differently from the generator output; run `npm run schema`');
    assert.fail(`schemas/switchyard.schema.json is stale; run \`npm run schema\` and commit the result. Differences (committed vs assembled):\n  ${diff.join('\n  ')}`);
  });
});

/**
 * Every property of every object schema in the document has a `description`, either its own or that of the
 * definition it `$ref`s. Returns the JSON pointers of the undescribed ones.
 */
function undescribedProperties(schema: Json): string[] {
  const defs = (schema.$defs ?? {}) as Record<string, Json>;
  const described = (node: Json): boolean => {
    if (typeof node.description === 'string' && node.description.trim().length > 0) return true;
    const ref = node.$ref;
    if (typeof ref === 'string' && ref.startsWith('#/$defs/')) {
      const target = defs[ref.slice('#/$defs/'.length)];
      return target !== undefined && typeof target.description === 'string' && target.description.trim().length > 0;
    }
    return false;
  };
  const missing: string[] = [];
  const walk = (node: unknown, path: (string | number)[]): void => {
    if (Array.isArray(node)) {
      node.forEach((n, i) => walk(n, [...path, i]));
      return;
    }
    if (typeof node !== 'object' || node === null) return;
    const obj = node as Json;
    const props = obj.properties;
    if (typeof props === 'object' && props !== null && !Array.isArray(props)) {
      for (const [name, sub] of Object.entries(props as Record<string, unknown>)) {
        if (typeof sub === 'object' && sub !== null && !described(sub as Json)) missing.push(pointer([...path, 'properties', name]));
      }
    }
    for (const [key, value] of Object.entries(obj)) {
      // `enum`/`const`/`examples`/`default` hold data, not schemas.
      if (key === 'enum' || key === 'const' || key === 'examples' || key === 'default') continue;
      walk(value, [...path, key]);
    }
  };
  walk(schema, []);
  // Every definition (plugin schemas, skeleton defs, shared defs, slots) describes itself too.
  for (const [name, def] of Object.entries(defs)) {
    if (typeof def.description !== 'string' || def.description.trim() === '') missing.push(pointer(['$defs', name]));
  }
  return missing;
}

describe('schema descriptions', () => {
  it('every property of every plugin schema and skeleton definition has a description', () => {
    const missing = undescribedProperties(fullSchema());
    assert.deepEqual(missing, [], `properties without a \`description\`:\n  ${missing.join('\n  ')}`);
  });

  it('the check finds an undescribed property', () => {
    const schema = {
      $defs: { a: { description: 'A.', type: 'object', properties: { ok: { type: 'string', description: 'x' }, bad: { type: 'string' } } } },
      properties: { viaRef: { $ref: '#/$defs/a' }, bare: { type: 'object', properties: { deep: { type: 'integer' } } } },
    };
    assert.deepEqual(undescribedProperties(schema).sort(), ['/$defs/a/properties/bad', '/properties/bare', '/properties/bare/properties/deep']);
  });
});

describe('plugins/presets/catalog.ts, full.ts and full-manifests.json', () => {
  it('are what `npm run catalog` generates from the plugin modules of first-party.ts', async () => {
    for (const [file, text] of await generatedFiles()) {
      assert.equal(readFileSync(file, 'utf8'), text, `${relative(ROOT, file)} is stale: run \`npm run catalog\` and commit the result`);
    }
  });

  it('FIRST_PARTY_KEYS lists exactly the keys, aliases and `config:` sections of the full preset', () => {
    const expected: string[] = [];
    for (const plugin of fullPreset as readonly { kind: string; key: string; aliases?: readonly string[]; configSections?: readonly { name: string }[] }[]) {
      if (plugin.kind === 'slot') continue; // slot names are not config keys
      expected.push(plugin.key, ...(plugin.aliases ?? []), ...(plugin.configSections ?? []).map((s) => s.name));
    }
    const listed = [...FIRST_PARTY_KEYS];
    const dupes = listed.filter((k, i) => listed.indexOf(k) !== i);
    assert.deepEqual(dupes, [], 'FIRST_PARTY_KEYS lists a key twice');
    const missing = expected.filter((k) => !listed.includes(k));
    const extra = listed.filter((k) => !expected.includes(k));
    assert.deepEqual(
      { missing, extra },
      { missing: [], extra: [] },
      'FIRST_PARTY_KEYS differs from the full preset: add the missing keys, remove the extra ones',
    );
  });
});
