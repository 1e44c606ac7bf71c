// The config validator compiles only the schemas of the plugins a config names (kernel/config/validate-config.ts,
// docs/perf.md "Startup"). These tests hold it to its promise: the same issues as the whole schema, for valid
// configs, invalid ones and plugin configs put where they do not belong; and every first-party schema still
// compiles in strict mode.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { buildRegistry } from '../../kernel/boot/build-registry.ts';
import { assembleSchema } from '../../kernel/config/assemble-schema.ts';
import { ConfigValidator } from '../../kernel/config/validate-config.ts';
import { FIRST_PARTY_KEYS } from '../../plugins/presets/catalog.ts';
import { fullPreset } from '../../plugins/presets/full.ts';
import { minimalPreset } from '../../plugins/presets/minimal.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

function yamlFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { recursive: true })
    .map(String)
    .filter((f) => f.endsWith('.yaml'))
    .map((f) => join(ROOT, dir, f));
}

/** Deterministic pseudo-random numbers, so a failure reproduces. */
function random(seed: number): (n: number) => number {
  let s = seed;
  return (n) => {
    s = (s * 1103515245 + 12345) & 0x7fffffff;
    return s % n;
  };
}

type Json = unknown;
const paths = (v: Json, at: (string | number)[] = [], out: (string | number)[][] = []): (string | number)[][] => {
  out.push(at);
  if (v !== null && typeof v === 'object') for (const [k, c] of Object.entries(v)) paths(c, [...at, Array.isArray(v) ? Number(k) : k], out);
  return out;
};
const get = (v: Json, at: (string | number)[]): Json => at.reduce<Json>((o, k) => (o as Record<string | number, Json> | undefined)?.[k], v);

async function validators(preset: readonly unknown[]) {
  const registry = await buildRegistry(preset, [], undefined);
  const schema = assembleSchema(registry);
  const slotKeys = registry.plugins().flatMap(({ plugin }) => (plugin.kind === 'slot' ? [] : [plugin.key, ...(plugin.aliases ?? [])]));
  return {
    // As the gateway builds it for first-party plugins only: no meta-schema check (the `whole` one below makes it).
    pruned: new ConfigValidator(schema, FIRST_PARTY_KEYS, { slotNouns: registry.slotNouns(), checkSchema: false }),
    whole: new ConfigValidator(schema, FIRST_PARTY_KEYS, { prune: false, slotNouns: registry.slotNouns() }),
    slotKeys,
  };
}

describe('config validator: schemas compiled for the plugins in use', () => {
  it('every first-party plugin schema compiles in strict mode', async () => {
    for (const preset of [fullPreset, minimalPreset]) {
      const { pruned } = await validators(preset);
      assert.doesNotThrow(() => pruned.compileAll());
    }
  });

  it('every first-party plugin schema is a valid JSON Schema (the check the gateway skips for them at start)', async () => {
    for (const preset of [fullPreset, minimalPreset]) {
      const schema = assembleSchema(await buildRegistry(preset, [], undefined));
      assert.doesNotThrow(() => new ConfigValidator(schema, FIRST_PARTY_KEYS, { checkSchema: true }));
      const broken = structuredClone(schema) as { $defs: Record<string, Record<string, unknown>> };
      const name = Object.keys(broken.$defs)[0]!;
      broken.$defs[name] = { ...broken.$defs[name], type: 'strng' };
      assert.throws(() => new ConfigValidator(broken as typeof schema, FIRST_PARTY_KEYS, { checkSchema: true }), /schema is invalid/);
    }
  });

  it('gives the same issues as the whole schema, for the examples and hundreds of mutations of them', async () => {
    const { pruned, whole, slotKeys } = await validators(fullPreset);
    const files = [...yamlFiles('examples'), ...yamlFiles('test/config/fixtures')];
    const bases = files.map((f) => parse(readFileSync(f, 'utf8'), { merge: true }) as Json);
    // Sub-objects of every file: grafted elsewhere, they put plugin configs in places they do not belong.
    const grafts = bases.flatMap((b) => paths(b).map((p) => get(b, p)).filter((v) => v !== null && typeof v === 'object'));
    const wrong: Json[] = [1, 'x', [], {}, true, null, -5, '1s', 'http://x', { bogus: 1 }, [{}], 0];
    const rnd = random(20261122);
    let invalid = 0;
    for (const [i, base] of bases.entries()) {
      assert.deepEqual(pruned.validate(base), whole.validate(base), files[i]);
      for (let n = 0; n < 60; n++) {
        const config = structuredClone(base);
        for (let m = 1 + rnd(3); m > 0; m--) {
          const all = paths(config);
          const at = all[rnd(all.length)]!;
          if (at.length === 0) continue;
          const parent = get(config, at.slice(0, -1)) as Record<string | number, Json>;
          const key = at[at.length - 1]!;
          const target = get(config, at);
          switch (rnd(5)) {
            case 0:
              parent[key] = structuredClone(wrong[rnd(wrong.length)]);
              break;
            case 1:
              if (!Array.isArray(parent)) delete parent[key];
              break;
            case 2:
              parent[key] = structuredClone(grafts[rnd(grafts.length)]);
              break;
            case 3:
              if (!Array.isArray(parent)) parent[`${String(key).slice(0, -1)}z`] = 1;
              break;
            default:
              if (target !== null && typeof target === 'object' && !Array.isArray(target)) {
                (target as Record<string, Json>)[slotKeys[rnd(slotKeys.length)]!] = rnd(2) ? structuredClone(grafts[rnd(grafts.length)]) : {};
              }
          }
        }
        const expected = whole.validate(config);
        if (expected.length > 0) invalid++;
        assert.deepEqual(pruned.validate(config), expected, `${files[i]}, mutation ${n}:\n${JSON.stringify(config)}`);
      }
    }
    assert.ok(invalid > bases.length * 20, `the mutations mostly produce invalid configs (${invalid})`);
  });

  it('a plugin that appears only in a later config gets its schema checked then', async () => {
    const { pruned } = await validators(fullPreset);
    const route = (policies: Json) => ({ binds: [{ port: 8080, listeners: [{ routes: [{ policies, backends: [{ host: '127.0.0.1:1' }] }] }] }] });
    assert.deepEqual(pruned.validate(route({ requestHeaderModifier: { set: { 'x-a': 'b' } } })), []);
    const issues = pruned.validate(route({ cors: { allowOrigins: 'https://a.example' } }));
    assert.deepEqual(
      issues.map((i) => [i.path.join('.'), i.message]),
      [['binds.0.listeners.0.routes.0.policies.cors.allowOrigins', 'must be an array, got the string "https://a.example"']],
    );
    assert.deepEqual(pruned.validate(route({ cors: { allowOrigins: ['https://a.example'] } })), []);
  });
});
