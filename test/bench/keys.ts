// The virtual-keys rows (issue 13 "Targets"; alone with BENCH_ONLY=keys): what a key check, a budget reservation and
// its settlement add to an LLM request. The same `ai` route (openAI provider, `hostOverride` to the fixed-answer
// upstream, a 221-byte non-streamed chat completion with `max_tokens` 256, answered with 80 completion tokens, so
// every keyed request's settlement is a refund as with a real provider: see MAX_TOKENS) without `virtualKeys`, and
// with it on the embedded SQLite store and, when `redis-server` is on PATH, on a Redis store. Two shapes of budgets,
// each as 1 key against 1,000 keys in 100 teams with every request using the next key in turn (so every key's and
// team's counters are live, and each key is looked up every 1,000 requests):
// - `own` (the strict case): every key has budgets of its own, and so do its team and the organisation: three
//   counters × two budgets reserved and settled per request; with 1,000 keys that is 2,202 budgets.
// - `team` (the target's wording, "1,000 keys and 100 budgets"): keys with no budget of their own, each of the 100
//   teams one budget (USD per month): one counter reserved and settled per request, against 1 key in 1 team.
// Every keyed request also settles its key's two lifetime counters (tokens, USD: the usage API's). Keys are made in
// the store before the gateway starts (as the management API makes them), not declared in the config: each request
// finds its key in the store (SQLite) or the store's short-lived cache (Redis, ADR 0061). BENCH_KEYS_SHAPES=own (or
// team) runs one shape only. `apikey` (not run unless named) is the floor of any keyed request: the same route with
// `apiKey` and its keys in the config (one map lookup and one attribute per request, no store, no budgets), 1 key against
// 1,000 used in turn.
//
// Figures: the added c=1 p50 (the keyed row's p50 minus the plain row's, per round, median), and the throughput and
// CPU per request of 1,000 keys against one key, per shape: the verdict from rounds that load the two gateways at once
// on the same core (side-by-side.ts, ADR 0109), the rows loaded one after the other beside it. Targets: ≤ 150 µs p50 on SQLite, ≤ 1 ms on the shared
// store; 1,000 keys and 100 budgets do not change throughput measurably.
import { closeSync, existsSync, mkdirSync, openSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { openStore } from '../../plugins/lib/key-store/open-store.ts';
import type { StoreSpec } from '../../plugins/lib/key-store/open-store.ts';
import type { Budget } from '../../plugins/lib/key-store/types.ts';
import { digestOf } from '../../plugins/lib/key-store/secrets.ts';
import { freePort } from '../helpers/ports.ts';
import { chatRequestWithMaxTokens, SMALL_ANSWER } from './llm-bodies.ts';

/**
 * The request's `max_tokens`: 256 unless BENCH_KEYS_MAX_TOKENS=<n> (ADR 0100). The upstream answers 80 completion
 * tokens whatever the cap; a provider never answers more than the cap, so with a cap above the answer (as here) the
 * reservation's estimate (prompt estimate + max_tokens) is above the real usage and every settlement is a refund, as
 * with a real provider: the case ADR 0097 holds until the counter's next write. Until session 13 the bench sent the
 * shared CHAT_REQUEST's 64 (`BENCH_KEYS_MAX_TOKENS=64` still does): answers above their cap, every settlement a charge.
 */
const MAX_TOKENS = Number(process.env.BENCH_KEYS_MAX_TOKENS ?? 256);
const BODY = chatRequestWithMaxTokens(MAX_TOKENS);
import type { BenchKit } from './peers.ts';
import { postRounds } from './post-rounds.ts';
import { sideBySide } from './side-by-side.ts';
import type { SideBySide } from './side-by-side.ts';
import type { PostRow } from './post-rounds.ts';
import type { Child } from './run.ts';

const PATH = '/v1/chat/completions';
/**
 * BENCH_KEYS_BASELINE=<dir>: another checkout's 1,000-key gateway side by side with this one's, each with its keys
 * used in turn, instead of 1 key against 1,000 (the side-by-side rounds alone): what a change does where the keys are
 * many. Two gateways of the same code read −2.7 to +1.2 % per run here (docs/perf.md "Session 19"). This checkout's
 * code seeds both stores: for a baseline whose key store format is the same.
 */
const BASELINE = process.env.BENCH_KEYS_BASELINE;
const SIDE_ONLY = process.env.BENCH_KEYS_SIDE_ONLY === '1' || BASELINE !== undefined;
const KEYS = 1000;
const TEAMS = 100;
const keySecret = (i: number): string => `sk-bench-${String(i).padStart(4, '0')}-0123456789abcdef`;
/** Budgets never reached in a bench run: every request is reserved and settled, none refused. */
const big = (): Record<string, unknown>[] => [{ usd: 1e9, period: 'month' }, { tokens: 1e12, period: 'day' }];
const BIG: readonly Budget[] = [{ unit: 'usd', limit: 1e9, period: 'month' }, { unit: 'tokens', limit: 1e12, period: 'day' }];
/** The `team` shape's one budget per team (never reached either). */
const TEAM_ONLY = (): Record<string, unknown>[] => [{ usd: 1e9, period: 'month' }];

/**
 * Whose budgets a keyed row's requests reserve from (see the header): `own` is the strict case, `team` the target's
 * wording; `apikey` has no budgets and no store (`apiKey` with the keys in the config: the floor).
 */
type Shape = 'own' | 'team' | 'apikey';
const SHAPES: readonly Shape[] = (process.env.BENCH_KEYS_SHAPES ?? 'own,team').split(',').map((s) => {
  if (s !== 'own' && s !== 'team' && s !== 'apikey') throw new Error(`BENCH_KEYS_SHAPES: \`${s}\` is not \`own\`, \`team\` or \`apikey\``);
  return s;
});
/** The shapes with budgets in a key store (the `virtualKeys` rows). */
const BUDGET_SHAPES = SHAPES.filter((s) => s !== 'apikey');

/** The `apikey` shape's policy: `keys` keys in the config, every one a key of the 1,000-key rows. */
function apiKeys(keys: number): Record<string, unknown> {
  return { mode: 'strict', keys: Array.from({ length: keys }, (_, i) => ({ key: keySecret(i), metadata: { owner: `user${i}@example.com` } })) };
}

/** A row of the interleaved POST rounds (post-rounds.ts) with what this bench adds. */
interface KeysRow extends PostRow {
  readonly store: 'none' | 'sqlite' | 'redis';
  readonly keys: number;
  readonly shape?: Shape;
  /** The BENCH_KEYS_BASELINE checkout's gateway. */
  readonly baseline?: boolean;
  readonly headers: Record<string, string>;
  /** The 1,000-key rows: every request the next key's `Authorization`. */
  readonly numberedHeader?: { readonly name: string; readonly value: string; readonly count: number; readonly width: number };
}

/** The policy's config: teams and (`own`) the organisation budget; the keys are made in the store (`seedKeys`). */
function virtualKeys(store: Record<string, unknown>, keys: number, shape: Shape): Record<string, unknown> {
  const teams = Array.from({ length: keys === 1 ? 1 : TEAMS }, (_, t) => ({ name: `team-${t}`, budgets: shape === 'own' ? big() : TEAM_ONLY() }));
  return shape === 'own' ? { store, budgets: big(), teams } : { store, teams };
}

/** Make `keys` keys in the store, as `POST /keys` would (in one of the teams; `own`: each with budgets of its own). */
async function seedKeys(spec: StoreSpec, cwd: string, keys: number, shape: Shape): Promise<void> {
  const store = await openStore(spec, cwd);
  const teams = keys === 1 ? 1 : TEAMS;
  for (let i = 0; i < keys; i++) {
    await store.create({ id: `key-${i}`, owner: `user${i}@example.com`, team: `team-${i % teams}`, budgets: shape === 'own' ? BIG : [], prefix: 'sk-bench', createdAt: new Date(0).toISOString(), source: 'api' }, digestOf(keySecret(i)));
  }
  await store.close();
}

async function startGateway(kit: BenchKit, dir: string, name: string, upstreamPort: number, policies: Record<string, unknown> | undefined, cli = kit.cli): Promise<{ child: Child; base: string }> {
  mkdirSync(dir, { recursive: true });
  const [port, admin, stats, readiness] = [await freePort(), await freePort(), await freePort(), await freePort()];
  const route: Record<string, unknown> = {
    name: 'ai',
    matches: [{ path: { pathPrefix: '/' } }],
    backends: [{ ai: { name: 'bench', provider: { openAI: {} }, hostOverride: `127.0.0.1:${upstreamPort}` } }],
  };
  if (policies) route.policies = policies;
  const file = join(dir, 'keys.yaml');
  writeFileSync(
    file,
    stringify({
      config: { adminAddr: `127.0.0.1:${admin}`, statsAddr: `127.0.0.1:${stats}`, readinessAddr: `127.0.0.1:${readiness}` },
      binds: [{ port, listeners: [{ name: 'bench', routes: [route] }] }],
    }),
  );
  const fd = openSync(join(dir, 'access.log'), 'w');
  // BENCH_KEYS_PROF=<dir>: each gateway writes a CPU profile there (a directory per gateway, sampled every 200 µs).
  const prof = process.env.BENCH_KEYS_PROF ? ['--cpu-prof', '--cpu-prof-interval', '200', '--cpu-prof-dir', join(process.env.BENCH_KEYS_PROF, name.replace(/[^\w]+/g, '-'))] : [];
  const child = kit.startPinned(name, kit.cpuTarget, kit.node, [...prof, cli, '-f', file], fd);
  closeSync(fd);
  await kit.waitFor200(`http://127.0.0.1:${readiness}/healthz/ready`, child, performance.now(), 60_000);
  return { child, base: `http://127.0.0.1:${port}` };
}

/** redis-server on a free port (no persistence), pinned with the upstream and the load generator; the bench stops it. */
async function startRedis(kit: BenchKit, dir: string, bin: string): Promise<{ port: number; stop: () => Promise<void> }> {
  const port = await freePort();
  mkdirSync(dir, { recursive: true });
  const child = kit.startPinned('redis-server', kit.cpuRest, bin, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], 'ignore');
  const until = Date.now() + 10_000;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = connect(port, '127.0.0.1', () => {
        s.end();
        resolve(true);
      });
      s.on('error', () => resolve(false));
    });
    if (ok) break;
    if (Date.now() > until) throw new Error(`redis-server did not start: ${child.stderr}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return { port, stop: () => kit.stop(child) };
}

/**
 * The store's share, in this process (no HTTP, so less exposed to a busy machine): per request, find the key by its
 * digest (every key in turn), reserve 6 counter lines (that key's, its team's, the organisation's × 2 budgets),
 * settle 6 deltas. Median of 5 batches, wall and CPU µs per request.
 */
async function storeOps(kit: BenchKit, spec: StoreSpec, keys: number): Promise<{ wallUs: number; cpuUs: number }> {
  const store = await openStore(spec, kit.work);
  for (let i = 0; i < keys; i++) {
    const record = { id: `key-${i}`, budgets: [], prefix: 'sk-bench', createdAt: new Date(0).toISOString(), source: 'api' as const, team: `team-${i % TEAMS}` };
    await store.create(record, digestOf(keySecret(i)));
  }
  const exp = Date.now() + 2 * 86_400_000;
  const perKey = Array.from({ length: keys }, (_, i) => {
    const names = [`k:key-${i}`, `t:team-${i % TEAMS}`, 'g'].flatMap((scope) => [`${scope}:usd:month`, `${scope}:tokens:day`]);
    return {
      digest: digestOf(keySecret(i)),
      lines: names.map((counter) => ({ counter, limit: 1e12, amount: 100, expiresAt: exp })),
      deltas: names.map((counter) => ({ counter, amount: -40, expiresAt: exp })),
    };
  });
  let turn = 0;
  const one = async (): Promise<void> => {
    const k = perKey[turn++ % keys]!;
    if (!(await store.find(k.digest))) throw new Error('key not found');
    if ((await store.reserve(k.lines, k.digest)) !== -1) throw new Error('refused');
    await store.settle(k.deltas);
  };
  for (let i = 0; i < 500; i++) await one();
  const wall: number[] = [];
  const cpu: number[] = [];
  for (let b = 0; b < 5; b++) {
    const n = 1000;
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    for (let i = 0; i < n; i++) await one();
    const t = performance.now() - t0;
    const c = process.cpuUsage(c0);
    wall.push((t * 1000) / n);
    cpu.push((c.user + c.system) / n);
  }
  await store.close();
  return { wallUs: kit.median(wall), cpuUs: kit.median(cpu) };
}

/** The keys rows: prints a table of added p50 and throughput per store and key count. */
export async function keysScenario(kit: BenchKit, notes: string[]): Promise<void> {
  // Checked when the keys rows run, not when run.ts imports this file for other scenarios.
  if (BASELINE !== undefined && !existsSync(join(BASELINE, 'bin/switchyard.js'))) throw new Error(`BENCH_KEYS_BASELINE: no bin/switchyard.js in \`${BASELINE}\` (a checkout of this repository, with node_modules)`);
  const { fmt, median } = kit;
  const dir = join(kit.work, 'keys');
  mkdirSync(dir, { recursive: true });
  const upstreamPort = await freePort();
  const upstream = kit.startPinned('keys upstream', kit.cpuRest, kit.node, [join(kit.here, 'upstream.ts'), String(upstreamPort)]);
  await kit.listening(upstream);

  const children: Child[] = [upstream];
  const all: KeysRow[] = [];
  const add = async (name: string, store: KeysRow['store'], keys: number, spec: StoreSpec | undefined, shape?: Shape, baseline = false): Promise<void> => {
    if (spec) await seedKeys(spec, dir, keys, shape!);
    const policies = spec ? { virtualKeys: virtualKeys(spec as Record<string, unknown>, keys, shape!) } : shape === 'apikey' ? { apiKey: apiKeys(keys) } : undefined;
    const cli = baseline ? join(BASELINE!, 'bin/switchyard.js') : kit.cli;
    const gw = await startGateway(kit, join(dir, `${store}-${keys}-${shape ?? 'none'}${baseline ? '-baseline' : ''}`), name, upstreamPort, policies, cli);
    children.push(gw.child);
    const numberedHeader = keys > 1 ? { name: 'authorization', value: `Bearer ${keySecret(0).replace('0000', '[<n>]')}`, count: keys, width: 4 } : undefined;
    all.push({ name, store, keys, shape, baseline, url: gw.base + PATH, headers: { 'content-type': 'application/json', authorization: `Bearer ${keySecret(0)}` }, numberedHeader, pids: kit.processTree(gw.child.proc.pid!), cpu: [], rps: [], p50: [], bad: 0, errors: 0 });
  };

  await add('ai route, no keys', 'none', 0, undefined);
  /**
   * A shape's two rows: 1 key (or the baseline's KEYS keys), and KEYS keys used in turn; `spec` names the key store
   * (none for `apikey`, whose keys are in the config).
   */
  const pair = async (store: KeysRow['store'], shape: Shape, what: readonly [string, string], spec?: (keys: number, tag?: string) => StoreSpec): Promise<void> => {
    if (BASELINE) await add(`${what[1]} (${BASELINE})`, store, KEYS, spec?.(KEYS, '-baseline'), shape, true);
    else await add(what[0], store, 1, spec?.(1), shape);
    await add(what[1], store, KEYS, spec?.(KEYS), shape);
  };
  /** The `virtualKeys` rows' names on one store. */
  const budgetRows = (store: 'sqlite' | 'redis', shape: Shape): [string, string] =>
    shape === 'own'
      ? [`virtualKeys ${store}, 1 key`, `virtualKeys ${store}, ${KEYS} keys / ${TEAMS} teams, in turn`]
      : [`virtualKeys ${store}, 1 key, 1 team budget`, `virtualKeys ${store}, ${KEYS} keys / ${TEAMS} team budgets, in turn`];
  if (SHAPES.includes('apikey')) await pair('none', 'apikey', ['apiKey, 1 key', `apiKey, ${KEYS} keys in the config, in turn`]);
  for (const shape of BUDGET_SHAPES) await pair('sqlite', shape, budgetRows('sqlite', shape), (keys, tag = '') => ({ sqlite: { path: join(dir, `${shape}-${keys}${tag}.db`) } }));
  const redisBin = kit.onPath('redis-server') ?? (existsSync('/usr/bin/redis-server') ? '/usr/bin/redis-server' : undefined);
  let redis: { port: number; stop: () => Promise<void> } | undefined;
  if (redisBin) {
    redis = await startRedis(kit, join(dir, 'redis'), redisBin);
    const url = `redis://127.0.0.1:${redis.port}`;
    for (const shape of BUDGET_SHAPES) await pair('redis', shape, budgetRows('redis', shape), (keys, tag = '') => ({ redis: { url, prefix: `${shape}-${keys}${tag}:` } }));
  } else notes.push('redis-server is not on PATH: no shared-store rows');

  const ops: string[] = [];
  for (const name of SIDE_ONLY ? [] : redis ? ['sqlite', 'redis'] : ['sqlite']) {
    for (const keys of [1, KEYS]) {
      const spec: StoreSpec = name === 'sqlite' ? { sqlite: { path: join(dir, `ops-${keys}.db`) } } : { redis: { url: `redis://127.0.0.1:${redis!.port}`, prefix: `ops${keys}:` } };
      const m = await storeOps(kit, spec, keys);
      ops.push(`| ${name} | ${keys} | ${fmt(m.wallUs, 1)} | ${fmt(m.cpuUs, 1)} |`);
    }
  }

  for (const r of all) {
    const res = await kit.post(r.url, BODY, r.headers);
    if (res.status !== 200 || res.body.length !== SMALL_ANSWER.length) throw new Error(`${r.name} answered ${res.status}: ${res.body.slice(0, 300)}`);
  }

  const request = (r: KeysRow) => ({ headers: r.headers, numberedHeader: r.numberedHeader, body: BODY });
  // BENCH_KEYS_SIDE_ONLY=1: the side-by-side rounds alone (no added p50, no absolute rows): for quick A/B work.
  if (!SIDE_ONLY) await postRounds(kit, all, request);
  // The throughput verdict's rounds (ADR 0109): each store and shape's 1-key and 1,000-key gateways loaded at once.
  const paired = new Map<KeysRow, SideBySide>();
  /** The row a 1,000-key row is compared with: the 1-key row, or the baseline's 1,000-key row. */
  const against = (r: KeysRow): boolean => (BASELINE ? r.baseline === true : r.keys === 1);
  for (const many of all.filter((r) => r.keys === KEYS && !r.baseline)) {
    const one = all.find((r) => r.store === many.store && r.shape === many.shape && against(r))!;
    paired.set(many, await sideBySide(kit, one, many, request));
  }
  for (const c of children) await kit.stop(c);
  await redis?.stop();

  const plain = all[0]!;
  // Per round, against the plain row of the same round: drift on a busy machine moves both.
  const added = (r: KeysRow): number[] => r.p50.map((v, i) => (v - plain.p50[i]!) * 1000);
  console.log(`\nkeys: POST ${PATH} (${BODY.length} B, max_tokens ${MAX_TOKENS}: settlements are ${MAX_TOKENS >= 80 ? 'refunds' : 'charges'}), ${SMALL_ANSWER.length} B answer; the ${KEYS}-key rows use every key in turn; shapes ${SHAPES.join(', ')}: \`own\` reserves and settles 3 counters (key, team, organisation) × 2 budgets per request, \`team\` one team budget (keys without budgets of their own)`);
  if (!SIDE_ONLY) console.log(`\n| target | req/s (c=${kit.connections}) | CPU µs/req | p50 ms (c=1) | added p50 µs per round (median) |\n|---|---:|---:|---:|---:|`);
  for (const r of SIDE_ONLY ? [] : all) {
    const a = added(r);
    console.log(
      `| ${r.name} | ${fmt(median(r.rps), 0)} (${r.rps.map((v) => fmt(v, 0)).join(', ')}) | ${fmt(median(r.cpu), 1)} | ${fmt(median(r.p50), 3)} | ` +
        `${r === plain ? '—' : `${a.map((v) => fmt(v, 0)).join(', ')} (${fmt(median(a), 0)})`} |`,
    );
  }
  if (!SIDE_ONLY) console.log(`\nstore operations in the bench process (find + reserve 6 lines + settle 6 deltas, every key in turn, median of 5 × 1000):\n\n| store | keys | wall µs/request | CPU µs/request |\n|---|---:|---:|---:|\n${ops.join('\n')}`);
  const checks: string[] = [];
  for (const store of ['none', 'sqlite', 'redis'] as const) {
    for (const shape of SHAPES) {
      const one = all.find((r) => r.store === store && r.shape === shape && against(r));
      const many = all.find((r) => r.store === store && r.shape === shape && r.keys === KEYS && !r.baseline);
      if (!one || !many) continue;
      const limit = store === 'sqlite' ? 150 : 1000;
      const a = median(added(one));
      const floor = shape === 'apikey';
      const budgets = BASELINE
        ? `${KEYS} keys in turn (${floor ? 'apiKey, in the config' : shape === 'own' ? 'budgets of their own' : 'team budgets'}), this checkout vs ${BASELINE}`
        : floor
          ? `floor: apiKey with ${KEYS} keys in the config vs 1 key (one lookup per request, no store)`
          : shape === 'own' ? `${KEYS} keys with budgets of their own, ${TEAMS} teams, the organisation (${KEYS * 2 + TEAMS * 2 + 2} budgets) vs 1 key` : `${KEYS} keys and ${TEAMS} budgets (team budgets) vs 1 key and 1 budget`;
      if (!SIDE_ONLY && !floor) checks.push(`| key check + reservation + settlement on ${store} (${one.name.replace(/^virtualKeys \w+, /, '')}) adds ≤ ${limit} µs p50 | ${a <= limit ? 'PASS' : 'MISS'} | ${fmt(a, 0)} µs |`);
      // Side by side (ADR 0109): the median of the rounds' ratios, with the one-after-the-other rows' for reference.
      const side = paired.get(many)!;
      const change = (median(side.rps) - 1) * 100;
      const cpu = median(side.cpu);
      const apart = (median(many.rps) / median(one.rps) - 1) * 100;
      const sorted = [...side.rps].sort((x, y) => x - y);
      const q = (f: number): string => fmt((sorted[Math.min(sorted.length - 1, Math.floor(f * sorted.length))]! - 1) * 100, 1);
      checks.push(
        `| ${budgets}${floor ? '' : ` on ${store}`}: throughput, side by side | ${BASELINE ? 'A/B' : floor ? 'reference' : change >= -5 ? (change <= 5 ? 'PASS (within 5%)' : 'PASS (1,000 keys faster: noise)') : 'CHECK'} | ` +
          `${change >= 0 ? '+' : ''}${fmt(change, 1)}% (rounds' quartiles ${q(0.25)} to ${q(0.75)}%; CPU per request ${fmt(cpu, 2)}×${SIDE_ONLY ? '' : `; one after the other ${apart >= 0 ? '+' : ''}${fmt(apart, 1)}%`}) |`,
      );
      if (side.bad > 0) notes.push(`${many.name} side by side: ${side.bad} non-2xx, errors or timeouts`);
    }
  }
  if (checks.length) console.log(`\n| target check | verdict | measured |\n|---|---|---|\n${checks.join('\n')}`);
  for (const r of all.filter((x) => x.bad > 0 || x.errors > 0)) notes.push(`${r.name}: ${r.bad} non-2xx and ${r.errors} errors/timeouts during the measurement`);
}
