// docs/phases.md is the one table of policy order (ARCHITECTURE.md §1.4): it must list every installed policy
// with the phase and order its manifest declares, and the phase values of kernel/sdk/phases.ts.
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Phase } from 'switchyard/sdk';
import type { PolicyPlugin } from 'switchyard/sdk';
import { fullPreset } from '../../plugins/presets/full.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const PHASES_DOC = readFileSync(join(ROOT, 'docs/phases.md'), 'utf8');

const cells = (row: string): string[] =>
  row
    .trim()
    .replace(/^\||\|$/g, '')
    .split('|')
    .map((c) => c.trim().replace(/^`|`$/g, ''));

const policies = (fullPreset as readonly { kind: string }[]).filter((p): p is PolicyPlugin => p.kind === 'policy');

describe('docs/phases.md', () => {
  it('lists every installed policy with its phase and order, and nothing else', () => {
    const start = PHASES_DOC.indexOf('<!-- installed-policies:start -->');
    const end = PHASES_DOC.indexOf('<!-- installed-policies:end -->');
    assert.ok(start >= 0 && end > start, 'docs/phases.md keeps the installed-policies markers around its table');
    const rows = PHASES_DOC.slice(start, end)
      .split('\n')
      .filter((l) => l.startsWith('| `'))
      .map(cells);
    const documented = new Map(rows.map((r) => [r[0]!, { phase: r[1]!, order: Number(r[2]), rank: Number(r[3]) }]));
    const problems: string[] = [];
    for (const p of policies) {
      const order = p.order ?? 0;
      const rank = Phase[p.phase] * 1000 + order;
      const row = documented.get(p.key);
      const want = `| \`${p.key}\` | \`${p.phase}\` | ${order} | ${rank} | … |`;
      if (!row) problems.push(`missing row for \`${p.key}\`: ${want}`);
      else if (row.phase !== p.phase || row.order !== order || row.rank !== rank) {
        problems.push(`\`${p.key}\` is documented as ${row.phase}/${row.order}/${row.rank}; the manifest says ${want}`);
      }
      documented.delete(p.key);
    }
    for (const key of documented.keys()) problems.push(`row for \`${key}\`, which is not an installed policy`);
    assert.deepEqual(problems, [], `docs/phases.md is stale:\n  ${problems.join('\n  ')}`);
  });

  it('the rows are in rank order', () => {
    const start = PHASES_DOC.indexOf('<!-- installed-policies:start -->');
    const end = PHASES_DOC.indexOf('<!-- installed-policies:end -->');
    const ranks = PHASES_DOC.slice(start, end)
      .split('\n')
      .filter((l) => l.startsWith('| `'))
      .map((l) => Number(cells(l)[3]));
    assert.deepEqual(ranks, [...ranks].sort((a, b) => a - b));
  });

  it('the pipeline table shows the numeric phase values of kernel/sdk/phases.ts', () => {
    for (const [name, value] of Object.entries(Phase)) {
      assert.match(PHASES_DOC, new RegExp(`\\| \`${name}\` \\| ${value} \\|`), `phase \`${name}\` = ${value} appears in the pipeline table`);
    }
  });
});

// issue 10 item 7: the architecture and phase pages describe what exists; a plugin that is installed is not "planned".
describe('docs/architecture.md and docs/phases.md', () => {
  const installed = new Set(
    (fullPreset as readonly { kind: string; key: string; aliases?: readonly string[] }[]).flatMap((p) => (p.kind === 'slot' ? [] : [p.key, ...(p.aliases ?? [])])),
  );
  /** `cloudBackend` → `cloud-backend`: folder names too. */
  const kebab = (key: string): string => key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
  for (const key of [...installed]) installed.add(kebab(key));

  for (const doc of ['docs/architecture.md', 'docs/phases.md']) {
    it(`${doc} calls no installed plugin planned`, () => {
      const problems: string[] = [];
      readFileSync(join(ROOT, doc), 'utf8')
        .split('\n')
        .forEach((line, i) => {
          const at = line.search(/\bplanned\b/i);
          if (at < 0) return;
          const named = [...line.slice(at).matchAll(/`([^`]+)`/g)].map((m) => m[1]!).filter((n) => installed.has(n));
          if (named.length) problems.push(`${doc}:${i + 1}: calls ${named.map((n) => `\`${n}\``).join(', ')} planned, but it is installed`);
        });
      assert.deepEqual(problems, []);
    });
  }
});

// issue 10 "Done when": docs/architecture.md draws the layering as it is. The files it names exist, and its layer
// "Kernel layers" diagram is checked by test/unit/kernel-layers.test.ts.
describe('docs/architecture.md draws the current kernel', () => {
  const doc = readFileSync(join(ROOT, 'docs/architecture.md'), 'utf8');
  const kernelFiles = new Set(readdirSync(join(ROOT, 'kernel'), { recursive: true }).map((f) => String(f).split(/[\\/]/).pop()!));

  it('every kernel file it names in its kernel table and diagram exists', () => {
    const kernelPart = doc.slice(0, doc.indexOf('## plugins/'));
    const named = new Set([...kernelPart.matchAll(/(?<![\w.\/-])([a-z0-9-]+\.ts)\b/g)].map((m) => m[1]!));
    const missing = [...named].filter((f) => !kernelFiles.has(f));
    assert.deepEqual(missing, [], `docs/architecture.md names kernel files that do not exist: ${missing.join(', ')}`);
  });

});
