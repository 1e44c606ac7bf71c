// The peers bench's result tables (BENCH_ONLY=peers, peers.ts): one row per target and answer size, the issue-15 measures
// as ratios to agentgateway and to the bare proxy (the installed package the headline, ADR 0098), and the A/B tables of
// the interleaved rounds. Printed as Markdown on stdout.
import { CHAT_REQUEST, LARGE_ANSWER, SMALL_ANSWER } from './llm-bodies.ts';
import type { Child } from './run.ts';

export type Kind = 'direct' | 'bare' | 'installed' | 'switchyard' | 'baseline' | 'agentgateway';
export type Size = 'small' | '16 KiB';

export interface Target {
  readonly kind: Kind;
  readonly name: string;
  readonly base: string;
  readonly child: Child;
  /** The serving processes: their CPU time and summed RSS are read during the c=N phase. */
  pids: number[];
}

export interface PeerRow {
  readonly target: Target;
  readonly size: Size;
  readonly url: string;
  readonly answer: string;
  /** Per round. Latencies in ms. */
  readonly rps: number[];
  readonly cpu: number[];
  readonly p50c1: number[];
  readonly p99c1: number[];
  readonly p99cN: number[];
  readonly rss: number[];
  bad: number;
  errors: number;
  /** Requests sent in the measured phases (warm-ups not counted). */
  served: number;
}

/** What the tables need of the bench kit: the load's connection count and its number formatting. */
export interface TableKit {
  readonly connections: number;
  fmt(n: number, digits?: number): string;
  median(values: readonly number[]): number;
}

/** Print the per-row table, the ratios table and the A/B tables of one run's rows. */
export function printPeerTables(kit: TableKit, targets: readonly Target[], rows: readonly PeerRow[], upstreamName: string): void {
  const { fmt, median } = kit;
  const rowOf = (kind: Kind, size: Size): PeerRow | undefined => rows.find((r) => r.target.kind === kind && r.size === size);
  const direct = (size: Size): PeerRow => rowOf('direct', size)!;
  const addedP50 = (r: PeerRow): number => (median(r.p50c1) - median(direct(r.size).p50c1)) * 1000;
  const addedP99 = (r: PeerRow): number => (median(r.p99c1) - median(direct(r.size).p99c1)) * 1000;
  const rss = (r: PeerRow): number => Math.max(...r.rss.filter(Number.isFinite));
  const spread = (r: PeerRow): string => {
    if (r.rps.length < 2) return '';
    return ` ±${fmt((100 * (Math.max(...r.rps) - Math.min(...r.rps))) / 2 / median(r.rps), 0)}%`;
  };

  console.log(`\nupstream: ${upstreamName}; POST ${CHAT_REQUEST.length} B chat-completion body, answers ${SMALL_ANSWER.length} B (small) and ${LARGE_ANSWER.length} B (16 KiB)`);
  console.log(`\n| target | answer | req/s (c=${kit.connections}) | CPU µs/req | p50 ms (c=1) | added p50 | p99 ms (c=1) | added p99 | p99 ms (c=${kit.connections}) | RSS under load |`);
  console.log('|---|---|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const r of rows) {
    const isDirect = r.target.kind === 'direct';
    console.log(
      `| ${r.target.name} | ${r.size} | ${fmt(median(r.rps), 0)}${spread(r)} | ${fmt(median(r.cpu), 1)} | ${fmt(median(r.p50c1), 3)} | ${isDirect ? '—' : `+${fmt(addedP50(r), 0)} µs`} | ` +
        `${fmt(median(r.p99c1), 3)} | ${isDirect ? '—' : `+${fmt(addedP99(r), 0)} µs`} | ${fmt(median(r.p99cN), 3)} | ${fmt(rss(r), 1)} MiB |`,
    );
  }

  // One line per measure: the proxies' figures, then Switchyard (installed, clone) and agentgateway as ratios.
  type Measure = [label: string, unit: string, digits: number, of: (r: PeerRow) => number, size?: Size];
  const measures: Measure[] = [];
  for (const size of ['small', '16 KiB'] as const) {
    measures.push(
      [`CPU per request, ${size}`, 'µs', 1, (r) => median(r.cpu), size],
      [`req/s at c=${kit.connections}, ${size}`, '', 0, (r) => median(r.rps), size],
      [`added p50 at c=1, ${size}`, 'µs', 0, addedP50, size],
      [`added p99 at c=1, ${size}`, 'µs', 0, addedP99, size],
      [`p99 at c=${kit.connections}, ${size}`, 'ms', 3, (r) => median(r.p99cN), size],
    );
  }
  measures.push(['RSS under load (largest)', 'MiB', 1, (r) => r.rss.length ? rss(r) : NaN]);
  const has = (kind: Kind): boolean => targets.some((t) => t.kind === kind);
  const value = (kind: Kind, m: Measure): number => {
    if (!has(kind)) return NaN;
    if (m[4]) {
      const r = rowOf(kind, m[4]);
      return r ? m[3](r) : NaN;
    }
    const both = rows.filter((r) => r.target.kind === kind);
    return both.length ? Math.max(...both.map((r) => m[3](r))) : NaN;
  };
  const cell = (v: number, m: Measure): string => (Number.isFinite(v) ? `${fmt(v, m[2])}${m[1] ? ` ${m[1]}` : ''}` : '—');
  const ratio = (a: number, b: number): string => (Number.isFinite(a) && Number.isFinite(b) && b !== 0 ? `${fmt(a / b)}×` : '—');
  // The headline is the installed package, what users run (ADR 0098); the clone's ratios beside it.
  console.log('\n| measure | bare undici proxy | switchyard installed | switchyard clone | agentgateway | installed ÷ agentgateway | clone ÷ agentgateway | installed ÷ bare | agentgateway ÷ bare |');
  console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const m of measures) {
    const [b, i, s, a] = [value('bare', m), value('installed', m), value('switchyard', m), value('agentgateway', m)];
    console.log(`| ${m[0]} | ${cell(b, m)} | ${cell(i, m)} | ${cell(s, m)} | ${cell(a, m)} | ${ratio(i, a)} | ${ratio(s, a)} | ${ratio(i, b)} | ${ratio(a, b)} |`);
  }
  console.log('Ratios are this ÷ that of the same measure: below 1 is better, except req/s (above 1 is better).');
  // A/B tables, each from the same interleaved rounds: the installed package against the clone, a baseline
  // against this checkout's clone and installed package.
  const abTable = (a: Kind, aName: string, b: Kind, bName: string): void => {
    if (!has(a) || !has(b)) return;
    console.log(`\n| measure | ${bName} | ${aName} | ${aName} ÷ ${bName} | per round (${aName}/${bName}) |`);
    console.log('|---|---:|---:|---:|---|');
    const perRound: [string, (r: PeerRow) => number[]][] = [['CPU', (r) => r.cpu], ['req/s', (r) => r.rps], ['RSS', (r) => r.rss]];
    for (const m of measures.filter((x) => x[4] === undefined || x[0].startsWith('CPU') || x[0].startsWith('req/s'))) {
      const of = perRound.find(([prefix]) => m[0].startsWith(prefix))![1];
      const [ra, rb] = m[4] ? [[rowOf(a, m[4])!], [rowOf(b, m[4])!]] : [rows.filter((r) => r.target.kind === a), rows.filter((r) => r.target.kind === b)];
      // RSS: the larger of the two answers' rows in each round.
      const series = (rs: PeerRow[]): number[] => of(rs[0]!).map((_, round) => Math.max(...rs.map((r) => of(r)[round]!)));
      const [sa, sb] = [series(ra), series(rb)];
      console.log(`| ${m[0]} | ${cell(value(b, m), m)} | ${cell(value(a, m), m)} | ${ratio(value(a, m), value(b, m))} | ${sa.map((v, k) => fmt(v / sb[k]!)).join(', ')} |`);
    }
  };
  abTable('installed', 'installed', 'switchyard', 'clone');
  abTable('switchyard', 'clone', 'baseline', 'baseline');
  // A baseline that is an installed package's folder (another pack, or this one with other node flags) is read
  // against the installed row.
  abTable('installed', 'installed', 'baseline', 'baseline');
}
