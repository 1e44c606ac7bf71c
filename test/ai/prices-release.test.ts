// An `ai` route's prices leave no YAML parser loaded (ADR 0099, `withYamlParser` in switchyard/sdk): the built-in
// catalog is made without one, and a catalog file is parsed with `yaml` loaded for the parse only, at the config load
// and at each reread when the file changes. Self-contained on purpose: nothing else in this process may load `yaml`
// (test/helpers/gateway.ts imports its `stringify`), so the gateway is made here with createGateway.
import assert from 'node:assert/strict';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { writeHeapSnapshot } from 'node:v8';
import { createGateway, LogSink } from 'switchyard';
import { FIRST_PARTY_KEYS } from '../../plugins/presets/catalog.ts';
import { fullPreset } from '../../plugins/presets/full.ts';
import { freePort } from '../helpers/ports.ts';
import { testTempDir } from '../helpers/temp-dir.ts';

/** What of `yaml` is still loaded: its modules in Node's module cache, and whether its lexer's source is in the heap. */
function yamlLeft(dir: string, name: string): { modules: string[]; lexerInHeap: boolean } {
  const modules = Object.keys(createRequire(import.meta.url).cache).filter((k) => /[\\/]node_modules[\\/]yaml[\\/]/.test(k));
  const file = writeHeapSnapshot(join(dir, `${name}.heapsnapshot`));
  // The start of yaml's lexer module (its state diagram comment): a snapshot keeps only the first 1,024 characters of
  // a string, and JSON-escapes the newline. Made after the snapshot, so the heap holds no string it matches but yaml's.
  const lexer = new RegExp(['START ->', 'stream\\\\n\\\\nstream'].join(' '));
  const lexerInHeap = lexer.test(readFileSync(file, 'latin1'));
  rmSync(file);
  return { modules, lexerInHeap };
}

async function until(what: string, done: () => boolean): Promise<void> {
  for (const end = Date.now() + 10_000; !done(); await sleep(100)) if (Date.now() > end) assert.fail(`timed out waiting for ${what}`);
}

describe('the YAML parser after an ai route loads its prices', () => {
  it('is not kept: after a start with the built-in and a file catalog, nor after the file is reread', async () => {
    const dir = testTempDir('switchyard-prices-release-');
    const catalog = join(dir, 'prices.json');
    const writeCatalog = (input: unknown): void => writeFileSync(catalog, JSON.stringify({ providers: { openai: { 'house-model': { input, output: 7 } } } }, null, 2));
    writeCatalog(3);
    const port = await freePort();
    const route = (name: string, costs: string): string[] => [
      `          - name: ${name}`,
      `            matches: [{ path: { pathPrefix: /${name} } }]`,
      `            backends:`,
      `              - ai: { name: ${name}, provider: { openAI: {} }${costs} }`,
    ];
    const file = join(dir, 'config.yaml');
    writeFileSync(
      file,
      [
        'config: { adminAddr: 127.0.0.1:0, statsAddr: 127.0.0.1:0, readinessAddr: 127.0.0.1:0 }',
        'binds:',
        `  - port: ${port}`,
        '    listeners:',
        '      - routes:',
        ...route('builtin', ''),
        ...route('file', `, costs: { catalog: ${JSON.stringify(catalog)} }`),
        '',
      ].join('\n'),
    );
    const logs: string[] = [];
    const gateway = createGateway(
      { preset: fullPreset, knownKeys: FIRST_PARTY_KEYS, config: { file }, watch: false, env: {} },
      new LogSink((chunk) => logs.push(...chunk.split('\n').filter(Boolean))),
    );
    try {
      await gateway.start();
      assert.deepEqual(yamlLeft(dir, 'after-start'), { modules: [], lexerInHeap: false }, 'after the start');

      // A change that does not follow the format: parsed (positioned), refused, logged.
      writeCatalog('cheap');
      await until('the refused change', () => logs.some((l) => l.includes('price catalog change ignored')));
      assert.match(logs.find((l) => l.includes('price catalog change ignored'))!, /prices\.json:\d+:\d+: `openai\.house-model\.input` must be a number/);
      // A good one: parsed and taken.
      writeCatalog(4.5);
      await until('the reread', () => logs.some((l) => l.includes('price catalog reloaded')));
      assert.deepEqual(yamlLeft(dir, 'after-rereads'), { modules: [], lexerInHeap: false }, 'after the rereads');
    } finally {
      await gateway.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
