// The whole configs the docs show (a ```yaml block of README.md or docs/*.md whose top level is `config` or `binds`,
// and `backends` besides) compile with the full preset, as a user who copies one gets it: every `${VAR}` they name
// set, and only the files they point at (certificates, CA bundles, plugins) allowed to be missing here (ADR 0146).
// Fragments (a policy, a route's `backends`) are left out: they are not configs on their own.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { createGateway, LogSink } from 'switchyard';
import { ConfigLoadError } from '../../kernel/config/format-issues.ts';
import { PluginRegistryError } from '../../kernel/registry/registry.ts';
import { FIRST_PARTY_KEYS } from '../../plugins/presets/catalog.ts';
import { fullPreset } from '../../plugins/presets/full.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const TOP = new Set(['config', 'binds', 'backends']);
/** A value every variable the docs name accepts (long enough for the admin password's minimum, a key's prefix). */
const PLACEHOLDER = 'doc-placeholder-value-0123456789';
/** The file a config names does not exist on this machine: the config itself is right. */
const MISSING_FILE = /cannot read .*no such file|cannot find plugin module/;

interface Block {
  readonly name: string;
  readonly text: string;
}

function wholeConfigs(): Block[] {
  const docs = ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
  const out: Block[] = [];
  for (const doc of docs) {
    const source = readFileSync(join(ROOT, doc), 'utf8');
    for (const m of source.matchAll(/^```ya?ml\n([\s\S]*?)^```/gm)) {
      let top: unknown;
      try {
        top = parse(m[1]!);
      } catch {
        top = undefined; // a syntax error is reported below, by the gateway
      }
      const keys = top && typeof top === 'object' && !Array.isArray(top) ? Object.keys(top) : [];
      // `backends:` alone is as often a route's list as the top-level one: a whole config has `binds` or `config`.
      if (!keys.every((k) => TOP.has(k)) || !(keys.includes('binds') || keys.includes('config'))) continue;
      const line = source.slice(0, m.index).split('\n').length + 1;
      out.push({ name: `${doc}:${line}`, text: m[1]! });
    }
  }
  return out;
}

describe('whole configs shown in README.md and docs/*.md', () => {
  const blocks = wholeConfigs();

  it('there are some', () => {
    assert.ok(blocks.some((b) => b.name.startsWith('README.md')) && blocks.length >= 8, blocks.map((b) => b.name).join(', '));
  });

  for (const block of blocks) {
    it(`${block.name} compiles with the full preset`, async () => {
      const env = { ...process.env };
      for (const [, name] of block.text.matchAll(/\$\{([A-Za-z_][A-Za-z0-9_]*)/g)) env[name!] ??= PLACEHOLDER;
      const gateway = createGateway({ preset: fullPreset, knownKeys: FIRST_PARTY_KEYS, config: { name: block.name, text: block.text }, env, watch: false, cwd: ROOT }, new LogSink(() => undefined));
      try {
        const snapshot = await gateway.compile(block.text);
        snapshot.dispose();
      } catch (err) {
        if (err instanceof PluginRegistryError && MISSING_FILE.test(err.message)) return;
        const issues = err instanceof ConfigLoadError ? err.issues.filter((i) => !MISSING_FILE.test(i.message)) : [err];
        if (issues.length > 0) assert.fail(`${block.name}:\n${(err as Error).message}`);
      } finally {
        await gateway.stop();
      }
    });
  }
});
