// What a config load uses and the data plane never does is not kept after it (ADR 0099): with a precompiled-validator
// cache (the CLI's, ADR 0042) neither the config validator, nor the generated module it ran, nor ajv (its instance
// and its modules) after a first start; nor js-yaml, the fast parser, nor `yaml`, the positioned one. A reload builds them again, and its errors read as before (file:line:col,
// did you mean).
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, it } from 'node:test';
import { queryObjects, writeHeapSnapshot } from 'node:v8';
import { join } from 'node:path';
import { ConfigLoadError, createGateway, LogSink } from 'switchyard';
import { parseWithoutPositions } from '../../kernel/sdk/fast-parse.ts';
import { ConfigValidator } from '../../kernel/config/validate-config.ts';
import { ValidatorCodeCache } from '../../kernel/config/validator-cache.ts';
import { FIRST_PARTY_KEYS } from '../../plugins/presets/catalog.ts';
import { fullPreset } from '../../plugins/presets/full.ts';
import { testTempDir } from '../helpers/temp-dir.ts';
import { headlines, yaml } from './helpers.ts';

const VALID = yaml('binds:', '  - port: 8080', '    listeners:', '      - routes:', '          - backends:', '              - host: 127.0.0.1:9');
const INVALID = yaml('binds:', '  - port: 8080', '    listeners:', '      - protocol: HTTPX', '        routes: []');

/** Live ConfigValidator instances after a full collection (`queryObjects` collects first). */
const liveValidators = (): number => queryObjects(ConfigValidator, { format: 'count' }) as number;

describe('the config validator after a load (ADR 0099)', { concurrency: false, skip: typeof queryObjects !== 'function' && 'v8.queryObjects needs Node 22' }, () => {
  it('is not kept with a code cache: no validator and no generated module after a start; a reload with an error is still positioned', async () => {
    const dir = testTempDir('switchyard-validators-');
    try {
      const validatorCache = new ValidatorCodeCache(dir);
      const start = async (): Promise<ReturnType<typeof createGateway>> => {
        const gateway = createGateway(
          { preset: fullPreset, knownKeys: FIRST_PARTY_KEYS, config: { name: 'test.yaml', text: VALID }, watch: false, env: {}, validatorCache },
          new LogSink(() => undefined),
        );
        await gateway.compile(VALID);
        return gateway;
      };
      // First start: nothing precompiled, ajv validates and the code is written shortly after.
      const first = await start();
      const written = (): number => (existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith('.cjs')).length : 0);
      for (let i = 0; i < 100 && written() === 0; i++) await sleep(50);
      assert.equal(written(), 1, 'the validator code was written');
      assert.equal(liveValidators(), 0, 'the first start kept no validator (nor its ajv instance)');
      // Nor ajv itself (loaded for that start's validation and for generating the code): out of the module cache
      // (its runtime helpers, which precompiled code requires, and its package.json, for the cache's file names, may stay)
      // and its source gone from the heap.
      const ajvModules = Object.keys(createRequire(import.meta.url).cache).filter((k) => /[\\/]node_modules[\\/]ajv[\\/]/.test(k) && !/[\\/]dist[\\/]runtime[\\/]|package\.json$/.test(k));
      assert.deepEqual(ajvModules, [], "ajv's modules are not in the module cache");
      const heapFile = writeHeapSnapshot(join(testTempDir('switchyard-ajv-heap-'), 'after-first-start.heapsnapshot'));
      // The start of ajv's core module (a snapshot keeps a string's first 1,024 characters); made after the snapshot:
      // see js-yaml's below.
      const ajvCore = new RegExp(['exports.CodeGen = exports.Name = exports.nil', '= exports.stringify = exports.str = exports._ = exports.KeywordCxt = void 0;'].join(' '));
      assert.equal(ajvCore.test(readFileSync(heapFile, 'latin1')), false, "ajv's core module is still in the heap");
      rmSync(heapFile);
      // Second start: the precompiled module runs, then goes.
      const second = await start();
      assert.equal(liveValidators(), 0, 'the second start kept no validator');
      const real = realpathSync(dir);
      const cached = Object.keys(createRequire(import.meta.url).cache).filter((k) => k.startsWith(real));
      assert.deepEqual(cached, [], 'the generated module is not in the module cache');
      // A reload with an error: built again, positioned, with its suggestion. (Checked in a function of its own: an
      // error's unformatted stack holds the frames' closures, the validator among them, while the error lives.)
      const reloadError = async (): Promise<void> => {
        const err = await second.compile(INVALID).then(
          () => assert.fail('an invalid config compiled'),
          (e: unknown) => e,
        );
        assert.ok(err instanceof ConfigLoadError);
        assert.deepEqual(headlines(err), [
          'test.yaml:4:19: must be one of `HTTP`, `HTTPS`, got the string "HTTPX"; did you mean `HTTP`? (at binds[0].listeners[0].protocol) [SWY_ERR_CONFIG_SCHEMA]',
        ]);
      };
      await reloadError();
      // Its plugin set (none) had no code yet: it is written 500 ms later, then nothing of the load is left.
      for (let i = 0; i < 100 && written() < 2; i++) await sleep(50);
      assert.equal(liveValidators(), 0, 'nor after the failed reload');
      // And a valid reload still compiles.
      assert.ok(await second.compile(VALID));
      assert.ok(first);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('is kept without a code cache (each would be a full ajv compile)', async () => {
    const gateway = createGateway({ preset: fullPreset, knownKeys: FIRST_PARTY_KEYS, config: { name: 'test.yaml', text: VALID }, watch: false, env: {} }, new LogSink(() => undefined));
    await gateway.compile(VALID);
    await gateway.compile(VALID);
    assert.equal(liveValidators(), 1);
  });
});

describe('js-yaml after a load (ADR 0099)', () => {
  it('parsed the config and is not kept: its source is not in the heap after a start, nor its module in the cache', async () => {
    const dir = testTempDir('switchyard-js-yaml-');
    try {
      // The fast parse itself (not the positioned fallback it gives way to when js-yaml cannot load).
      assert.deepEqual(parseWithoutPositions(VALID), { binds: [{ port: 8080, listeners: [{ routes: [{ backends: [{ host: '127.0.0.1:9' }] }] }] }] });
      const gateway = createGateway({ preset: fullPreset, knownKeys: FIRST_PARTY_KEYS, config: { name: 'test.yaml', text: VALID }, watch: false, env: {} }, new LogSink(() => undefined));
      assert.ok(await gateway.compile(VALID));
      const cached = Object.keys(createRequire(import.meta.url).cache).filter((k) => k.includes('/js-yaml/'));
      assert.deepEqual(cached, [], 'js-yaml is not in the module cache');
      // Its source starts with its banner; a module that stays loaded keeps its source in the heap. (The pattern is
      // made after the snapshot, so the heap holds no string it matches but js-yaml's own.)
      const file = writeHeapSnapshot(join(dir, 'after-load.heapsnapshot'));
      const banner = new RegExp(['/\\*! js-yaml', '[0-9.]+ https:'].join(' '));
      assert.equal(banner.test(readFileSync(file, 'latin1')), false, "js-yaml's source is still in the heap");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('the positioned YAML parser after a load (ADR 0099)', () => {
  it('parsed a config with ${VAR} and is not kept: its modules are not in the cache, its lexer not in the heap', async () => {
    const dir = testTempDir('switchyard-yaml-');
    try {
      const text = VALID.replace('host: 127.0.0.1:9', 'host: ${UPSTREAM}');
      const gateway = createGateway({ preset: fullPreset, knownKeys: FIRST_PARTY_KEYS, config: { name: 'test.yaml', text }, watch: false, env: { UPSTREAM: '127.0.0.1:9' } }, new LogSink(() => undefined));
      const snapshot = await gateway.compile(text);
      assert.deepEqual(snapshot.config.binds, [{ port: 8080, listeners: [{ routes: [{ backends: [{ host: '127.0.0.1:9' }] }] }] }], 'the variable was expanded');
      const cached = Object.keys(createRequire(import.meta.url).cache).filter((k) => /[\\/]node_modules[\\/]yaml[\\/]/.test(k));
      assert.deepEqual(cached, [], "yaml's modules are not in the module cache");
      const file = writeHeapSnapshot(join(dir, 'after-load.heapsnapshot'));
      // The start of yaml's lexer module (a snapshot keeps a string's first 1,024 characters, newlines escaped); made
      // after the snapshot: see js-yaml's above.
      const lexer = new RegExp(['START ->', 'stream\\\\n\\\\nstream'].join(' '));
      assert.equal(lexer.test(readFileSync(file, 'latin1')), false, "yaml's lexer is still in the heap");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
