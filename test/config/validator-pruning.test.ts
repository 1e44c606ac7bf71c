// The config validator compiles only the schemas of the plugins a config names (kernel/config/validate-config.ts,
// docs/perf.md "Startup"). These tests hold it to its promise: the same issues as the whole schema, for valid
// configs, invalid ones and plugin configs put where they do not belong; and every first-party schema still
// compiles in strict mode.
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { buildRegistry } from '../../kernel/boot/build-registry.ts';
import { assembleSchema } from '../../kernel/config/assemble-schema.ts';
import { SecretMarks } from '../../kernel/config/secret-marks.ts';
import { ConfigValidator } from '../../kernel/config/validate-config.ts';
import { ValidatorCodeCache } from '../../kernel/config/validator-cache.ts';
import { FIRST_PARTY_KEYS } from '../../plugins/presets/catalog.ts';
import { fullPreset } from '../../plugins/presets/full.ts';
import { minimalPreset } from '../../plugins/presets/minimal.ts';
import { testTempDir } from '../helpers/temp-dir.ts';

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

/** The examples and fixtures, then `perBase` random mutations of each (deterministic): type changes, deletions, grafts. */
function forMutations(slotKeys: readonly string[], perBase: number, check: (config: Json, where: string) => void): number {
  const files = [...yamlFiles('examples'), ...yamlFiles('test/config/fixtures')];
  const bases = files.map((f) => parse(readFileSync(f, 'utf8'), { merge: true }) as Json);
  // Sub-objects of every file: grafted elsewhere, they put plugin configs in places they do not belong.
  const grafts = bases.flatMap((b) => paths(b).map((p) => get(b, p)).filter((v) => v !== null && typeof v === 'object'));
  const wrong: Json[] = [1, 'x', [], {}, true, null, -5, '1s', 'http://x', { bogus: 1 }, [{}], 0];
  const rnd = random(20261122);
  for (const [i, base] of bases.entries()) {
    check(base, files[i]!);
    for (let n = 0; n < perBase; n++) {
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
      check(config, `${files[i]}, mutation ${n}:\n${JSON.stringify(config)}`);
    }
  }
  return bases.length;
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
    let invalid = 0;
    const bases = forMutations(slotKeys, 60, (config, where) => {
      const expected = whole.validate(config);
      if (expected.length > 0) invalid++;
      assert.deepEqual(pruned.validate(config), expected, where);
    });
    assert.ok(invalid > bases * 20, `the mutations mostly produce invalid configs (${invalid})`);
  });

  it('a precompiled validator (ADR 0042) gives the same issues and the same secret marks as ajv', async () => {
    const registry = await buildRegistry(fullPreset, [], undefined);
    const schema = assembleSchema(registry);
    const slotKeys = registry.plugins().flatMap(({ plugin }) => (plugin.kind === 'slot' ? [] : [plugin.key, ...(plugin.aliases ?? [])]));
    const dir = testTempDir('switchyard-validators-');
    try {
      const options = { slotNouns: registry.slotNouns(), checkSchema: false };
      // The whole schema (not pruned): one generated validator that holds every plugin's checks.
      const plain = new ConfigValidator(schema, FIRST_PARTY_KEYS, { ...options, prune: false });
      const fast = new ConfigValidator(schema, FIRST_PARTY_KEYS, { ...options, prune: false, codeCache: new ValidatorCodeCache(dir) });
      assert.ok(fast.precompile({}), 'the code was generated and written');
      const quickstart = parse(readFileSync(join(ROOT, 'examples/quickstart.yaml'), 'utf8')) as Json;
      assert.deepEqual(fast.validate(quickstart), []);
      assert.equal((fast as unknown as { ajvInstance?: unknown }).ajvInstance, undefined, 'a valid config is checked without ajv');
      let valid = 0;
      forMutations(slotKeys, 25, (config, where) => {
        const [m1, m2] = [new SecretMarks(), new SecretMarks()];
        const expected = plain.validate(config, m1);
        if (expected.length === 0) valid++;
        assert.deepEqual(fast.validate(config, m2), expected, where);
        assert.deepEqual(m2.byPointer, m1.byPointer, `secret marks of ${where}`);
      });
      assert.ok(valid > 50, `some mutations stay valid (${valid})`);
      // Pruned, as the gateway runs it: the examples each through their own generated validator.
      const pruned = new ConfigValidator(schema, FIRST_PARTY_KEYS, options);
      const precompiled = new ConfigValidator(schema, FIRST_PARTY_KEYS, { ...options, codeCache: new ValidatorCodeCache(dir) });
      for (const file of yamlFiles('examples').slice(0, 6)) {
        const config = parse(readFileSync(file, 'utf8'), { merge: true }) as Json;
        assert.ok(precompiled.precompile(config));
        const [m1, m2] = [new SecretMarks(), new SecretMarks()];
        assert.deepEqual(precompiled.validate(config, m2), pruned.validate(config, m1), file);
        assert.deepEqual(m2.byPointer, m1.byPointer, file);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
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
