// docs/features.md names the test that proves each item: every file its Proof column names exists (a glob matches
// at least one file; a bare file name, written after its folder was named, exists under the repository), and a test
// name quoted after a file ("…" cut short or not) is in that file. A renamed or deleted test leaves no row pointing
// at nothing (ADR 0146).
import assert from 'node:assert/strict';
import { existsSync, globSync, readFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const FEATURES = readFileSync(join(ROOT, 'docs/features.md'), 'utf8');
const PATHLIKE = /\.(ts|js|mjs|yaml|yml|json|md)$/;

/** The last cell of every table row that has a Status column before it (header and rule rows left out). */
function proofCells(): { row: string; proof: string }[] {
  const out: { row: string; proof: string }[] = [];
  for (const line of FEATURES.split('\n')) {
    if (!line.startsWith('|') || /^\|\s*-/.test(line)) continue;
    // `\|` inside a cell is a literal bar (a shell pipe in an item), not a column.
    const cells = line.slice(1, -1).split(/(?<!\\)\|/).map((c) => c.trim());
    if (cells.length < 3 || cells.at(-2) === 'Status') continue;
    out.push({ row: cells[0]!.slice(0, 80), proof: cells.at(-1)! });
  }
  return out;
}

const everyFile = globSync('{bin,deploy,docs,examples,kernel,plugins,schemas,test}/**/*', { cwd: ROOT });
const byName = new Set(everyFile.map((f) => basename(f)));

describe('docs/features.md proofs', () => {
  const rows = proofCells();

  it('has rows to check', () => {
    assert.ok(rows.length > 300, `${rows.length} rows`);
  });

  it('every file a Proof cell names exists', () => {
    const missing: string[] = [];
    for (const { row, proof } of rows) {
      for (const [, token] of proof.matchAll(/`([^`\s]+)`/g)) {
        const path = token!.replace(/(:\d+)+$/, '').replace(/#.*$/, '');
        if (!PATHLIKE.test(path)) continue;
        const found = path.includes('*') ? globSync(path, { cwd: ROOT }).length > 0 : path.includes('/') ? existsSync(join(ROOT, path)) : byName.has(path);
        if (!found) missing.push(`${path} (row "${row}")`);
      }
    }
    assert.deepEqual(missing, []);
  });

  it('a test name quoted after a file is in that file', () => {
    const missing: string[] = [];
    for (const { row, proof } of rows) {
      for (const [, file, names] of proof.matchAll(/`([^`\s]+\.ts)`\s*\(([^)]*)\)/g)) {
        if (!existsSync(join(ROOT, file!))) continue;
        // Source text with its quote escapes undone: 'a team\'s' is written "a team's" in the doc.
        const text = readFileSync(join(ROOT, file!), 'utf8').replaceAll("\\'", "'");
        for (const [, quoted] of names!.matchAll(/"([^"]+)"/g)) {
          const name = quoted!.replace(/\s*…$/, '');
          if (!text.includes(name)) missing.push(`${file}: "${name}" (row "${row}")`);
        }
      }
    }
    assert.deepEqual(missing, []);
  });
});
