// docs/cel.md lists every CEL variable and function exactly as the environment registers them (issue 5), and its
// examples are real: each is compiled and evaluated against the request the page describes.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { BackendPlugin, Exchange, Plugin, PolicyPlugin } from 'switchyard/sdk';
import { EXCHANGE_ATTRIBUTES } from '../../kernel/exchange/kernel-exchange.ts';
import { CelExpressions } from '../../kernel/expr/cel-expressions.ts';
import { CelCIDR, CelIP } from '../../kernel/expr/cel-ip.ts';
import { fullPreset } from '../../plugins/presets/full.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const DOC = readFileSync(join(ROOT, 'docs/cel.md'), 'utf8');

/** Every policy the repository ships: the full preset plus every plugins/policies/<name>/plugin.ts. */
async function installedPolicies(): Promise<PolicyPlugin[]> {
  const all = new Map<string, PolicyPlugin>();
  const add = (p: unknown) => {
    for (const one of Array.isArray(p) ? p : [p]) {
      const plugin = one as Plugin;
      if (plugin?.kind === 'policy' && !all.has(plugin.key)) all.set(plugin.key, plugin);
    }
  };
  add(fullPreset);
  const dir = join(ROOT, 'plugins/policies');
  for (const name of readdirSync(dir)) {
    const file = join(dir, name, 'plugin.ts');
    if (existsSync(file)) add(((await import(pathToFileURL(file).href)) as { default: unknown }).default);
  }
  return [...all.values()];
}

const policies = await installedPolicies();
/** Backends publish variables too (the `ai` backend's `llm`). */
const backends = (fullPreset as readonly Plugin[]).filter((p): p is BackendPlugin => p?.kind === 'backend');
const publishers = new Map<string, Set<string>>();
const published = [...policies, ...backends].flatMap((p) => p.celVariables ?? []);
for (const p of [...policies, ...backends]) {
  for (const v of p.celVariables ?? []) {
    const name = typeof v === 'string' ? v : v.name;
    publishers.set(name, new Set([...(publishers.get(name) ?? []), p.key]));
  }
}
const cel = new CelExpressions(published);
const defs = cel.definitions();

/** Rows of the table between `<!-- name:start -->` and `<!-- name:end -->`, as cells (pipes escaped as `\|` kept). */
function table(name: string): string[][] {
  const start = DOC.indexOf(`<!-- ${name}:start -->`);
  const end = DOC.indexOf(`<!-- ${name}:end -->`);
  assert.ok(start >= 0 && end > start, `docs/cel.md keeps the ${name} markers`);
  return DOC.slice(start, end)
    .split('\n')
    .filter((l) => l.startsWith('| `'))
    .map((row) =>
      row
        .trim()
        .replace(/^\||\|$/g, '')
        .split(/(?<!\\)\|/)
        .map((c) => c.trim().replace(/\\\|/g, '|')),
    );
}

/** The backticked items of a cell, split on `<br>`. */
const codes = (cell: string): string[] => cell.split('<br>').map((part) => /`([^`]+)`/.exec(part)?.[1] ?? part.trim());

interface Example {
  readonly expr: string;
  readonly expected: string;
}

/** `` `expr` → `expected` `` or `` `expr` → error ``, separated by `<br>`. */
function examples(cell: string): Example[] {
  return cell.split('<br>').map((part) => {
    const m = /^`(.+)` → (?:`(.+)`|(error))$/.exec(part.trim());
    assert.ok(m, `example \`${part}\` is written as \`expr\` → \`result\` (or → error)`);
    return { expr: m[1]!, expected: m[2] ?? 'error' };
  });
}

/** The request docs/cel.md describes its examples against. */
const exchange = {
  method: 'GET',
  path: '/v1/items',
  query: '?limit=10&tag=a&tag=b',
  hostname: 'api.example.com',
  scheme: 'https',
  headers: { host: 'api.example.com', 'x-user': 'alice', accept: 'application/json', authorization: 'Bearer abc' },
  sourceAddress: '10.1.2.3',
  sourcePort: 40000,
  req: { httpVersion: '1.1' },
  // No attribute set through the SDK (`withheldCredentials` among them): CEL sees the headers as they are.
  get: () => undefined,
  // CEL reads attributes through the kernel's handle, as on a real exchange.
  [EXCHANGE_ATTRIBUTES]: () =>
    new Map<string, unknown>([
      ['jwt', { sub: 'alice', iss: 'https://issuer.example.com', groups: ['admins', 'dev'] }],
      ['apiKey', { key: 'k-123', team: 'search' }],
      ['basicAuth', { username: 'alice' }],
    ]),
} as unknown as Exchange;

/** A CEL value written the way the page writes results. */
function render(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(v);
  if (typeof v === 'bigint' || typeof v === 'boolean') return String(v);
  if (typeof v === 'number') return Number.isInteger(v) ? v.toFixed(1) : String(v);
  if (v === null) return 'null';
  if (v instanceof Uint8Array) return `b${JSON.stringify(Buffer.from(v).toString('utf8'))}`;
  if (Array.isArray(v)) return `[${v.map(render).join(', ')}]`;
  if (v instanceof CelIP) return `ip(${JSON.stringify(v.toString())})`;
  if (v instanceof CelCIDR) return `cidr(${JSON.stringify(v.toString())})`;
  return `<${Object.prototype.toString.call(v)}>`;
}

/** Attribute variables documented for a policy this tree does not have yet (or no longer has). */
const variableRows = table('cel-variables');
const pendingVariables = new Set(
  variableRows
    .filter((r) => r[2] !== '(always)' && !publishers.has(codes(r[0]!)[0]!) && codes(r[2]!).every((k) => !policies.some((p) => p.key === k)))
    .map((r) => codes(r[0]!)[0]!),
);

function checkExamples(rows: string[][], column: number): string[] {
  const problems: string[] = [];
  for (const row of rows) {
    for (const { expr, expected } of examples(row[column]!)) {
      if ([...pendingVariables].some((v) => new RegExp(`\\b${v}\\b`).test(expr))) continue;
      let compiled;
      try {
        // As a `config.logging` expression: `response` examples compile there (and evaluate as an error, no response here).
        compiled = cel.compile(expr, [], true);
      } catch (err) {
        problems.push(`\`${expr}\` does not compile: ${(err as Error).message}`);
        continue;
      }
      let got: string;
      try {
        got = render(compiled.evaluate(exchange));
      } catch {
        got = 'error';
      }
      if (got !== expected) problems.push(`\`${expr}\` → \`${got}\`, but the page says \`${expected}\``);
    }
  }
  return problems;
}

describe('docs/cel.md', () => {
  it('lists exactly the registered variables, with the policies that publish them', (t) => {
    for (const v of pendingVariables) t.diagnostic(`\`${v}\` is documented for a policy that is not in this tree yet; not checked`);
    const problems: string[] = [];
    const documented = new Map(variableRows.map((r) => [codes(r[0]!)[0]!, r]));
    for (const v of defs.variables) {
      const row = documented.get(v.name);
      if (!row) {
        problems.push(`missing row for variable \`${v.name}\` (${v.origin === 'gateway' ? 'always present' : `published by ${[...publishers.get(v.name)!].join(', ')}`})`);
        continue;
      }
      documented.delete(v.name);
      if (row[1] !== v.type) problems.push(`\`${v.name}\` is documented as ${row[1]}, registered as ${v.type}`);
      const want = v.origin === 'gateway' ? '(always)' : [...publishers.get(v.name)!].sort().map((k) => `\`${k}\``).join(', ');
      const have = row[2] === '(always)' ? '(always)' : codes(row[2]!).sort().map((k) => `\`${k}\``).join(', ');
      if (want !== have) problems.push(`\`${v.name}\`: "Published by" says ${have}, the installed policies say ${want}`);
    }
    for (const name of documented.keys()) if (!pendingVariables.has(name)) problems.push(`row for \`${name}\`, which is not a registered variable`);
    assert.deepEqual(problems, [], `docs/cel.md variables are stale:\n  ${problems.join('\n  ')}`);
  });

  it('lists exactly the fields of request and source', () => {
    const want = defs.variables.flatMap((v) => (v.fields ?? []).map((f) => `${v.name}.${f.name}: ${f.type}`)).sort();
    const have = table('cel-fields')
      .map((r) => `${codes(r[0]!)[0]}: ${r[1]}`)
      .sort();
    assert.deepEqual(have, want);
  });

  it('lists exactly the functions Switchyard adds, and each has a description', () => {
    const want = defs.functions.filter((f) => f.origin === 'gateway').map((f) => f.signature).sort();
    const have = table('cel-functions').flatMap((r) => codes(r[0]!)).sort();
    assert.deepEqual(have, want);
    for (const f of defs.functions) if (f.origin === 'gateway') assert.ok(f.description, `\`${f.signature}\` is registered with a description`);
  });

  it('lists exactly the standard library functions', () => {
    const want = defs.functions.filter((f) => f.origin === 'standard').map((f) => f.signature).sort();
    const have = table('cel-standard').flatMap((r) => codes(r[0]!)).sort();
    assert.deepEqual(have, want);
  });

  it('every row has examples, and every example evaluates to what the page says', () => {
    const problems = [
      ...checkExamples(variableRows, 4),
      ...checkExamples(table('cel-fields'), 3),
      ...checkExamples(table('cel-functions'), 2),
      ...checkExamples(table('cel-standard'), 2),
    ];
    assert.deepEqual(problems, [], `docs/cel.md examples are wrong:\n  ${problems.join('\n  ')}`);
  });
});
