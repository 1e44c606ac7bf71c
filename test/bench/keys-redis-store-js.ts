// The Redis key store's own JavaScript per request, 1 key against 1,000 keys in turn (docs/perf.md "Session 14,
// keyredis2"): keys-redis-cpu.ts's flows (find the key, reserve 6 lines, settle 6 refunds and 2 lifetime sums) on a
// RedisKeyStore whose client is a stand-in that answers each script with "all taken" at the end of the event-loop
// turn (as a round trip would: reservations made meanwhile batch) and each key lookup with the key's record. No socket,
// no Redis, no encoding: what is left is the store's, the settlement queue's and the key cache's work, which is what
// the number of keys changes in this process. Rows (1 key; KEYS_IN_TURN keys in turn; the same from
// KEYS_BASELINE=<checkout>) are interleaved round by round, CPU µs per request of this process (process.cpuUsage).
// KEYS_THRASH_KB=<n>: each request also reads n KiB of a 64 MiB buffer (a stride of 64 bytes, a different part each
// time), as a gateway's other work per request evicts what the store touched; a row with the driver and the reads
// alone is measured too, to subtract. KEYS_SHAPE=team: keys.ts's `team` shape. KEYS_ROWS=one or many: only the 1-key or the many-key rows (to profile one).
//
//   node test/bench/keys-redis-store-js.ts [rounds=8] [requests per round=20000] [concurrency=50]
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { KeyStore } from '../../plugins/lib/key-store/types.ts';
import { benchSecret, benchShape, keyFlow, TEAMS } from './keys-flows.ts';

const rounds = Number(process.argv[2] ?? 8);
const perRound = Number(process.argv[3] ?? 20000);
const concurrency = Number(process.argv[4] ?? 50);
const KEYS = Number(process.env.KEYS_IN_TURN ?? 1000);
const THRASH = Number(process.env.KEYS_THRASH_KB ?? 0) * 1024;
const secret = benchSecret;

const flow = (k: number): ReturnType<typeof keyFlow> => keyFlow(k, benchShape);

/** Stands in for RespClient: a script is answered "every reservation taken" (and the keys version) at the end of the turn. */
class AnswerAll {
  scripts = 0;
  private readonly records: Map<string, string>;
  private readonly prefix: string;
  constructor(records: Map<string, string>, prefix: string) {
    this.records = records;
    this.prefix = prefix;
  }
  command(...args: (string | number)[]): Promise<unknown> {
    if (args[0] !== 'EVALSHA') return Promise.resolve('OK');
    this.scripts++;
    const nkeys = Number(args[2]);
    const argv = 3 + nkeys;
    const reservations = Number(args[argv + 1 + 2 * Number(args[argv])]);
    // Every reservation taken, then the keys version (ADR 0106: never changed here).
    return new Promise((r) => setImmediate(() => r([...new Array<number>(reservations).fill(-1), 0])));
  }
  /** A key lookup: MGET of the digest's entry and the keys version. */
  queue(_mget: string, key: string): Promise<unknown> {
    return new Promise((r) => setImmediate(() => r([this.records.get(key.slice(this.prefix.length + 'digest:'.length)) ?? null, '0'])));
  }
  close(): void {}
}

type Flow = ReturnType<typeof flow>;
interface Row { name: string; store: KeyStore | undefined; client: AnswerAll | undefined; flows: Flow[]; turn: number; own: number[]; scripts: number; n: number }

const memory = THRASH > 0 ? new Uint8Array(64 << 20) : new Uint8Array(0);
let at = 0;
let sink = 0;
/** Read THRASH bytes of `memory`, one per 64-byte line, from where the last read stopped. */
const thrash = (): void => {
  for (let i = 0; i < THRASH; i += 64) {
    sink += memory[at]!;
    at += 64;
    if (at >= memory.length) at = 0;
  }
};

async function open(root: string, flows: Flow[]): Promise<{ store: KeyStore; client: AnswerAll }> {
  const mod = (await import(pathToFileURL(join(root, 'plugins/lib/key-store/redis-store.ts')).href)) as { RedisKeyStore: new (client: unknown, prefix: string) => KeyStore };
  const client = new AnswerAll(new Map(flows.map((f) => [f.digest, f.record])), 'js:');
  return { store: new mod.RedisKeyStore(client, 'js:'), client };
}

async function round(row: Row, n: number): Promise<void> {
  let left = n;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (left-- > 0) {
      const f = row.flows[row.turn++ % row.flows.length]!;
      if (THRASH > 0) thrash();
      const store = row.store;
      if (store === undefined) {
        await new Promise((r) => setImmediate(r));
        continue;
      }
      const found = store.find(f.digest);
      if (!(found instanceof Promise ? await found : found)) throw new Error('key not found');
      const r = store.reserve(f.lines, f.digest);
      if ((r instanceof Promise ? await r : r) !== -1) throw new Error('refused');
      await new Promise((r) => setImmediate(r));
      store.settle(f.deltas);
    }
  }));
}

const roots: [string, string][] = [['', resolve(import.meta.dirname, '../..')]];
if (process.env.KEYS_BASELINE) roots.push([' (baseline)', resolve(process.env.KEYS_BASELINE)]);
const rows: Row[] = [];
const one = [flow(500)];
const many = Array.from({ length: KEYS }, (_, i) => flow(i));
for (const [tag, root] of roots) {
  for (const [name, flows] of [[`1 key${tag}`, one], [`${KEYS} keys in turn${tag}`, many]] as const) {
    if (process.env.KEYS_ROWS && (process.env.KEYS_ROWS === 'one') !== (flows === one)) continue;
    const { store, client } = await open(root, flows);
    rows.push({ name, store, client, flows, turn: 0, own: [], scripts: 0, n: 0 });
  }
}
if (THRASH > 0) rows.push({ name: 'driver and reads alone', store: undefined, client: undefined, flows: one, turn: 0, own: [], scripts: 0, n: 0 });
for (const row of rows) {
  await round(row, 2 * KEYS);
  await row.store?.values([]);
}
for (let r = 0; r < rounds; r++) {
  for (const row of r % 2 ? [...rows].reverse() : rows) {
    const s0 = row.client?.scripts ?? 0;
    const c0 = process.cpuUsage();
    await round(row, perRound);
    const c = process.cpuUsage(c0);
    row.own.push((c.user + c.system) / perRound);
    row.scripts += (row.client?.scripts ?? 0) - s0;
    row.n += perRound;
  }
}
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
console.log(`${rounds} × ${perRound} at c=${concurrency}${THRASH ? `, ${THRASH / 1024} KiB read per request` : ''}`);
console.log('| row | CPU µs/req (rounds) | median | scripts/req |\n|---|---|---:|---:|');
for (const row of rows) console.log(`| ${row.name} | ${row.own.map((v) => v.toFixed(2)).join(', ')} | **${median(row.own).toFixed(2)}** | ${(row.scripts / row.n).toFixed(3)} |`);
for (const row of rows) await row.store?.close();
if (sink < 0) console.log(sink);
