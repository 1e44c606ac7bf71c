// Bytes V8 allocates per request on the embedded store's serving path (docs/perf.md "Virtual keys, session 10"): a
// key lookup (from the cache), a reservation of 6 lines, and a reservation with the previous request's 6 settlements
// riding on it, each case in its own process under `--trace-gc-nvp` (V8's own count, not heap deltas). A tool, not a
// test. Usage: node test/bench/keys-store-alloc.ts [checkout=this one] [requests=50000]
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const CASES = ['find', 'reserve', 'reserve+settle'] as const;

if (process.argv[2] === '--case') {
  const [, , , root, name, count] = process.argv;
  const { SqliteKeyStore } = (await import(pathToFileURL(join(root!, 'plugins/lib/key-store/sqlite-store.ts')).href)) as typeof import('../../plugins/lib/key-store/sqlite-store.ts');
  const dir = mkdtempSync(join(tmpdir(), 'keys-alloc-'));
  const store = await SqliteKeyStore.open(join(dir, 'keys.db'), { everyMs: 500 });
  await store.create({ id: 'k1', budgets: [], prefix: 'x', createdAt: new Date(0).toISOString(), source: 'api' }, 'd1');
  const names = ['k:k1', 't:t', 'g'].flatMap((scope) => [`${scope}:usd:month:2026-11`, `${scope}:tokens:day:2026-11-26`]);
  const lines = names.map((counter) => ({ counter, limit: 1e15, amount: 1, expiresAt: 0 }));
  const deltas = names.map((counter) => ({ counter, amount: -0.5, expiresAt: 0 }));
  const step = name === 'find' ? () => void store.find('d1') : name === 'reserve' ? () => void store.reserve(lines, 'd1') : () => (store.reserve(lines, 'd1'), store.settle(deltas));
  for (let i = 0; i < 5000; i++) step();
  const n = Number(count);
  process.stdout.write('START\n');
  for (let i = 0; i < n; i++) step();
  process.stdout.write('END\n');
  await store.close();
  rmSync(dir, { recursive: true, force: true });
} else {
  const root = resolve(process.argv[2] ?? join(import.meta.dirname, '../..'));
  const n = Number(process.argv[3] ?? 50_000);
  for (const name of CASES) {
    const out = spawnSync(process.execPath, ['--trace-gc-nvp', '--max-semi-space-size=4', import.meta.filename, '--case', root, name, String(n)], { encoding: 'utf8' }).stdout;
    const measured = out.slice(out.indexOf('START\n'), out.indexOf('END\n'));
    let bytes = 0;
    for (const m of measured.matchAll(/ allocated=(\d+) /g)) bytes += Number(m[1]);
    console.log(`${name}: ${(bytes / n).toFixed(0)} bytes/request`);
  }
}
