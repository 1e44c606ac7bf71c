// The kernel's folders form layers (docs/adr/0029, docs/architecture.md "Kernel layers"): a folder imports only
// folders of lower layers, or of its own layer without a loop. Every import counts, `import type` included: a type
// that points up is a design loop even when the emitted code has none. Reported as `file:line: what is wrong`.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { scanImports } from '../helpers/scan-imports.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/**
 * Lowest first. sdk → exchange → config/registry (with the services they and everything above lean on: CEL,
 * resources, telemetry) → compile → upstream → runtime → admin → boot. A new folder must be placed here.
 */
export const LAYERS: readonly (readonly string[])[] = [
  ['sdk'],
  ['exchange'],
  ['config', 'registry', 'expr', 'resources', 'telemetry'],
  ['compile'],
  ['upstream'],
  ['runtime'],
  ['admin'],
  ['boot'],
];

const RANK = new Map<string, number>();
LAYERS.forEach((folders, rank) => folders.forEach((f) => RANK.set(f, rank)));
/** Files directly under kernel/ (the package entry) sit on top. */
const TOP = LAYERS.length;

const posix = (p: string): string => p.split(sep).join('/');

/** `kernel/<folder>/…` → folder; a file directly under kernel/ → ''. */
function folderOf(file: string): string {
  const parts = file.split('/');
  return parts.length > 2 ? parts[1]! : '';
}

function rankOf(folder: string): number | undefined {
  return folder === '' ? TOP : RANK.get(folder);
}

/** Why `file` may not import `target` (both repo-relative kernel paths), or undefined when it may. */
export function checkLayer(file: string, target: string): string | undefined {
  const from = folderOf(file);
  const to = folderOf(target);
  if (from === to) return undefined;
  const a = rankOf(from);
  const b = rankOf(to);
  if (a === undefined) return `kernel/${from}/ has no layer; place it in LAYERS (test/unit/kernel-layers.test.ts) and docs/architecture.md`;
  if (b === undefined) return `kernel/${to}/ has no layer; place it in LAYERS (test/unit/kernel-layers.test.ts) and docs/architecture.md`;
  if (b > a) return `imports ${target}: kernel/${from}/ (layer ${a}) may not import kernel/${to}/ (layer ${b}), a higher layer`;
  return undefined;
}

function walk(dir: string, out: string[] = []): string[] {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const full = join(dir, e.name);
    if (e.isDirectory()) walk(full, out);
    else if (/\.[cm]?ts$/.test(e.name) && !e.name.endsWith('.d.ts') && !/\.test\.[cm]?ts$/.test(e.name)) out.push(full);
  }
  return out;
}

interface Edge {
  readonly file: string;
  readonly line: number;
  readonly target: string;
}

/** Relative imports between kernel files outside tests (a test may reach up for its fixtures). */
function kernelEdges(): Edge[] {
  const edges: Edge[] = [];
  for (const full of walk(join(ROOT, 'kernel'))) {
    const file = posix(relative(ROOT, full));
    for (const imp of scanImports(readFileSync(full, 'utf8'))) {
      if (!imp.specifier.startsWith('.')) continue;
      const target = posix(relative(ROOT, resolve(dirname(full), imp.specifier)));
      if (target.startsWith('kernel/')) edges.push({ file, line: imp.line, target });
    }
  }
  return edges;
}

/** Cycles in the folder graph, each as `a → b → … → a` with one import that makes each step. */
export function folderCycles(edges: readonly { file: string; line: number; target: string }[]): string[] {
  const graph = new Map<string, Map<string, string>>();
  for (const e of edges) {
    const a = folderOf(e.file);
    const b = folderOf(e.target);
    if (a === b) continue;
    const out = graph.get(a) ?? new Map<string, string>();
    if (!out.has(b)) out.set(b, `${e.file}:${e.line}`);
    graph.set(a, out);
  }
  const cycles: string[] = [];
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (n: string): void => {
    state.set(n, 'open');
    stack.push(n);
    for (const [m] of graph.get(n) ?? []) {
      if (state.get(m) === 'open') {
        const loop = [...stack.slice(stack.indexOf(m)), m];
        const steps = loop.slice(0, -1).map((x, i) => `${x || 'kernel'} → ${loop[i + 1] || 'kernel'} (${graph.get(x)!.get(loop[i + 1]!)})`);
        cycles.push(steps.join(', '));
      } else if (!state.has(m)) visit(m);
    }
    stack.pop();
    state.set(n, 'done');
  };
  for (const n of [...graph.keys()].sort()) if (!state.has(n)) visit(n);
  return cycles;
}

describe('kernel layers (docs/adr/0029)', () => {
  const edges = kernelEdges();

  it('finds the kernel’s imports (the scan is not blind)', () => {
    assert.ok(edges.length > 100, `expected many kernel imports, found ${edges.length}`);
    assert.ok(edges.some((e) => e.file === 'kernel/boot/gateway.ts' && e.target.startsWith('kernel/compile/')));
  });

  it('every kernel folder is placed in a layer', () => {
    const folders = readdirSync(join(ROOT, 'kernel'), { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name);
    const unplaced = folders.filter((f) => !RANK.has(f));
    assert.deepEqual(unplaced, [], `kernel folders without a layer: ${unplaced.join(', ')}`);
  });

  it('no kernel file imports a higher layer', () => {
    const problems = edges.flatMap((e) => {
      const reason = checkLayer(e.file, e.target);
      return reason ? [`${e.file}:${e.line}: ${reason}`] : [];
    });
    assert.equal(problems.length, 0, `kernel layering violations:\n  ${problems.join('\n  ')}`);
  });

  it('docs/architecture.md\'s "Kernel layers" diagram lists these layers, top to bottom', () => {
    const doc = readFileSync(join(ROOT, 'docs/architecture.md'), 'utf8');
    const block = doc.slice(doc.indexOf('## Kernel layers'));
    const open = block.indexOf('```\n') + 4;
    const diagram = block.slice(open, block.indexOf('```', open));
    // A row: its number, then the folders (`sdk/`, `config/  registry/ …`) before the description.
    const rows = diagram
      .split('\n')
      .map((l) => /^\s*(\d+)\s+((?:[a-z]+\/\s*)+)/.exec(l))
      .filter((m) => m !== null)
      .map((m) => `${m![1]}: ${[...m![2]!.matchAll(/([a-z]+)\//g)].map((f) => f[1]!).sort().join(' ')}`);
    const expected = LAYERS.map((folders, rank) => `${rank}: ${[...folders].sort().join(' ')}`).reverse();
    assert.deepEqual(rows, expected);
  });

  it('no import loop between kernel folders', () => {
    const cycles = folderCycles(edges);
    assert.equal(cycles.length, 0, `import loops between kernel folders:\n  ${cycles.join('\n  ')}`);
  });

  describe('the rules', () => {
    const cases: [file: string, target: string, allowed: boolean][] = [
      ['kernel/upstream/pooled-target.ts', 'kernel/exchange/kernel-exchange.ts', true],
      ['kernel/upstream/pooled-target.ts', 'kernel/runtime/exchange-impl.ts', false],
      ['kernel/compile/compile-snapshot.ts', 'kernel/upstream/pooled-target.ts', false],
      ['kernel/compile/policy-set.ts', 'kernel/runtime/run-hooks.ts', false],
      ['kernel/runtime/request-pipeline.ts', 'kernel/compile/snapshot.ts', true],
      ['kernel/runtime/failover.ts', 'kernel/upstream/request-body.ts', true],
      ['kernel/expr/cel-expressions.ts', 'kernel/runtime/exchange-impl.ts', false],
      ['kernel/config/assemble-schema.ts', 'kernel/registry/registry.ts', true],
      ['kernel/exchange/kernel-exchange.ts', 'kernel/sdk/index.ts', true],
      ['kernel/sdk/plugin.ts', 'kernel/exchange/kernel-exchange.ts', false],
      ['kernel/boot/gateway.ts', 'kernel/runtime/request-pipeline.ts', true],
      ['kernel/index.ts', 'kernel/boot/container.ts', true],
      ['kernel/newfolder/x.ts', 'kernel/sdk/index.ts', false],
    ];
    for (const [file, target, allowed] of cases) {
      it(`${allowed ? 'allows' : 'refuses'} ${file} → ${target}`, () => {
        const reason = checkLayer(file, target);
        if (allowed) assert.equal(reason, undefined, reason);
        else assert.ok(reason, `expected ${target} to be refused in ${file}`);
      });
    }

    it('reports a loop inside one layer', () => {
      const loop = folderCycles([
        { file: 'kernel/config/a.ts', line: 1, target: 'kernel/registry/b.ts' },
        { file: 'kernel/registry/b.ts', line: 2, target: 'kernel/config/c.ts' },
        { file: 'kernel/compile/d.ts', line: 3, target: 'kernel/config/a.ts' },
      ]);
      assert.deepEqual(loop, ['config → registry (kernel/config/a.ts:1), registry → config (kernel/registry/b.ts:2)']);
    });
  });
});
