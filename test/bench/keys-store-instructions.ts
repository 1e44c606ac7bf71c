// The embedded store's work per request counted in CPU instructions (docs/perf.md "Session 12, keysql2"): what the
// 1,000-key gap is made of, independent of the machine's load. The flows are keys-wal-frames.ts's (find the key,
// reserve its key's, team's and organisation's USD and token lines, settle once 50 later requests have reserved, with
// the two lifetime counters), grouped G per event-loop turn as the gateway's store groups them (ADR 0090), on a
// virtual clock of 3,000 requests a second: what is due when (settlements, lifetime sums, refunds held) does not
// depend on how fast the machine, or valgrind, runs.
//
//   node test/bench/keys-store-instructions.ts [keys=1000] [requests=6000] [group=8] [root=this checkout]
//     one run: CPU µs per request, statements and rows per request (no valgrind).
//   KEYS_IR=1 node test/bench/keys-store-instructions.ts [requests=6000] [group=8] [root...]
//     under callgrind (valgrind must be installed): for 1 key and 1,000 keys, each root, a run with no requests and
//     one with `requests`; prints instructions per request (the difference), in all and inside SQLite statements
//     (`StatementSync::Run`, inclusive), and the functions whose instructions differ most between 1 and 1,000 keys.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { CounterDelta, CounterLine } from '../../plugins/lib/key-store/types.ts';

const here = resolve(import.meta.dirname, '../..');

if (process.env.KEYS_IR === '1') {
  const [N, G] = [Number(process.argv[2] ?? 6000), Number(process.argv[3] ?? 8)];
  const roots = process.argv.length > 4 ? process.argv.slice(4).map((r) => resolve(r)) : [here];
  const work = mkdtempSync(join(tmpdir(), 'keys-ir-'));
  /** Instructions by function (self, or inclusive) of one callgrind run. */
  const count = (keys: number, n: number, root: string): { total: number; run: number; self: Map<string, number> } => {
    const out = join(work, `cg.${keys}.${n}`);
    const r = spawnSync('valgrind', ['--tool=callgrind', `--callgrind-out-file=${out}`, '--smc-check=all-non-file', process.execPath, import.meta.filename, String(keys), String(n), String(G), root], { encoding: 'utf8', env: { ...process.env, KEYS_IR: '' } });
    if (r.status !== 0) throw new Error(`valgrind: ${r.stderr.slice(-2000)}`);
    const parse = (inclusive: boolean): Map<string, number> => {
      const m = new Map<string, number>();
      const text = execFileSync('callgrind_annotate', [`--inclusive=${inclusive ? 'yes' : 'no'}`, '--threshold=100', out], { encoding: 'utf8', maxBuffer: 64 << 20 });
      for (const line of text.split('\n')) {
        const hit = /^\s*([\d,]+) \(\s*[\d.]+%\)\s+(.*?)(?: \[.*\])?$/.exec(line);
        if (!hit) continue;
        const name = hit[2]!.replace('???:', '').slice(0, 100);
        m.set(name, (m.get(name) ?? 0) + Number(hit[1]!.replaceAll(',', '')));
      }
      return m;
    };
    const incl = parse(true);
    const run = [...incl].find(([k]) => k.includes('StatementSync::Run'))?.[1] ?? 0;
    const self = parse(false);
    return { total: self.get('PROGRAM TOTALS') ?? [...self.values()].reduce((a, b) => a + b, 0), run, self };
  };
  for (const root of roots) {
    const per: Record<number, { total: number; run: number; self: Map<string, number> }> = {};
    for (const keys of [1, 1000]) {
      const [a, b] = [count(keys, 0, root), count(keys, N, root)];
      const self = new Map<string, number>();
      for (const [k, v] of b.self) self.set(k, (v - (a.self.get(k) ?? 0)) / N);
      per[keys] = { total: (b.total - a.total) / N, run: (b.run - a.run) / N, self };
      console.log(`${root}: ${keys} key(s): ${Math.round(per[keys]!.total)} instructions/request, ${Math.round(per[keys]!.run)} in SQLite statements`);
    }
    const diff = [...new Set([...per[1]!.self.keys(), ...per[1000]!.self.keys()])]
      .filter((k) => k !== 'PROGRAM TOTALS')
      .map((k) => [k, (per[1000]!.self.get(k) ?? 0) - (per[1]!.self.get(k) ?? 0)] as const)
      .sort((x, y) => Math.abs(y[1]) - Math.abs(x[1]))
      .slice(0, 15);
    for (const [k, v] of diff) console.log(`  1,000 − 1 key: ${v >= 0 ? '+' : ''}${Math.round(v)}  ${k}`);
  }
  rmSync(work, { recursive: true, force: true });
} else {
  await flows(Number(process.argv[2] ?? 1000), Number(process.argv[3] ?? 6000), Number(process.argv[4] ?? 8), resolve(process.argv[5] ?? here));
}

/** `n` requests with `keys` keys in turn (in min(keys, 100) teams), `group` reservations per event-loop turn. */
async function flows(keys: number, n: number, group: number, root: string): Promise<void> {
  // The virtual clock: 3,000 requests a second (Date.now is what the store and its queues read).
  let now = Date.now();
  Date.now = () => now;
  const { SqliteKeyStore } = (await import(pathToFileURL(join(root, 'plugins/lib/key-store/sqlite-store.ts')).href)) as typeof import('../../plugins/lib/key-store/sqlite-store.ts');
  const { digestOf } = (await import(pathToFileURL(join(root, 'plugins/lib/key-store/secrets.ts')).href)) as typeof import('../../plugins/lib/key-store/secrets.ts');
  const work = mkdtempSync(join(tmpdir(), 'keys-ir-db-'));
  const never = 3_600_000;
  const store = await SqliteKeyStore.open(join(work, 'k.db'), { everyMs: never, quietMs: never, busyFrames: 1e9, restartFrames: 1e9 }, { group: true });
  const teams = Math.min(keys, 100);
  const secret = (i: number): string => `sk-bench-${String(i).padStart(4, '0')}-0123456789abcdef`;
  for (let i = 0; i < keys; i++) await store.create({ id: `key-${i}`, team: `team-${i % teams}`, budgets: [], prefix: 'sk', createdAt: '', source: 'api' }, digestOf(secret(i)));
  const digests = Array.from({ length: keys }, (_, i) => digestOf(secret(i)));
  const exp = now + 40 * 86_400_000;
  const names = Array.from({ length: keys }, (_, i) =>
    [`k:key-${i}`, `t:team-${i % teams}`, 'g'].flatMap((s) => [`${s}:usd:month:2026-11`, `${s}:tokens:day:2026-11-26`]),
  );
  // Statements and their rows (a row: a counter; padding rows have none), counted around the store's statements.
  let statements = 0;
  let rows = 0;
  // The statements by size are the store's `sql` (sqlite-statements.ts), or the store's own in a checkout before it.
  const spy = ((store as unknown as { sql?: object }).sql ?? store) as Record<string, (size: number) => { run(...a: unknown[]): unknown }>;
  for (const m of ['reserveStatement', 'checkedStatement']) {
    const make = spy[m]!.bind(spy);
    spy[m] = (size) => {
      const st = make(size);
      return { run: (...a) => (statements++, (rows += a.filter((x, j) => j % 5 === 0 && j < size * 5 && x !== null).length), st.run(...a)) };
    };
  }
  let seq = 0;
  const inflight: CounterDelta[][] = [];
  const cpu = process.cpuUsage();
  for (let done = 0; done < n; done += group) {
    const answers: (number | Promise<number>)[] = [];
    for (let g = 0; g < group; g++) {
      const i = seq++ % keys;
      now += 1000 / 3000;
      store.find(digests[i]!);
      const lines: CounterLine[] = names[i]!.map((counter, j) => ({ counter, amount: j % 2 ? 300 : 0.001, limit: 1e12, expiresAt: exp }));
      answers.push(store.reserve(lines, digests[i]!));
      inflight.push([
        ...lines.map((l) => ({ counter: l.counter, amount: -l.amount / 2, expiresAt: exp })),
        { counter: `k:key-${i}:tokens:total:all`, amount: 150, expiresAt: 0, lazy: true },
        { counter: `k:key-${i}:usd:total:all`, amount: 0.0005, expiresAt: 0, lazy: true },
      ]);
    }
    for (const r of await Promise.all(answers)) if (r !== -1) throw new Error(`refused: ${r}`);
    while (inflight.length > 50) store.settle(inflight.shift()!);
  }
  const used = process.cpuUsage(cpu);
  console.error(`${keys} key(s), ${n} requests, groups of ${group}: CPU ${((used.user + used.system) / Math.max(n, 1)).toFixed(1)} µs/request; ${(statements / Math.max(n, 1)).toFixed(2)} statements and ${(rows / Math.max(n, 1)).toFixed(2)} rows per request`);
  await store.close();
  rmSync(work, { recursive: true, force: true });
}
