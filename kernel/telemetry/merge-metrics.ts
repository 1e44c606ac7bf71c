import { MAX_SERIES_PER_METRIC, OVERFLOW } from './metrics.ts';

/**
 * Families whose threads' values are not added up: the highest one is the gateway's (the generation; the event-loop
 * delay of the worst thread, whose requests wait).
 */
const HIGHEST = new Set(['switchyard_config_generation', 'nodejs_eventloop_delay_seconds']);

interface Family {
  readonly head: string[];
  readonly samples: Map<string, number>;
  /** The family's label sets (a histogram's `le` left out): at most MAX_SERIES_PER_METRIC, as in each thread. */
  readonly labelSets: Set<string>;
}

/**
 * The series a sample is summed into: its own, or past the cap (label sets new to the family), the overflow series
 * with the sample's `le`. Each thread keeps its own cap; without this one, the threads' different label sets would
 * add up to the cap times the workers, and a dead worker's kept counters to more with every restart.
 */
function cappedSeries(f: Family, series: string): string {
  const brace = series.indexOf('{');
  if (brace === -1) return series;
  const name = series.slice(0, brace);
  const labels = series.slice(brace + 1, -1);
  // `le` is rendered last; a value holding `le="` has its quote escaped, so this finds only the label.
  const le = name.endsWith('_bucket') ? labels.lastIndexOf('le="') : -1;
  const set = le > 0 && labels.charCodeAt(le - 1) === 44 ? labels.slice(0, le - 1) : le === 0 ? '' : labels;
  if (f.labelSets.has(set) || set === OVERFLOW) return series;
  if (f.labelSets.size < MAX_SERIES_PER_METRIC) {
    f.labelSets.add(set);
    return series;
  }
  return le >= 0 ? `${name}{${OVERFLOW},${labels.slice(le)}}` : `${name}{${OVERFLOW}}`;
}

/**
 * Several Prometheus texts (a supervisor's own and each worker's) as one: families in first-seen order, each
 * series once, its value the sum across the texts (counters, histogram buckets, sums and counts, in-flight gauges)
 * or, for the families in HIGHEST, the largest.
 */
export function mergeMetrics(texts: readonly string[]): string {
  const families = new Map<string, Family>();
  for (const text of texts) {
    let current: Family | undefined;
    let currentName = '';
    for (const line of text.split('\n')) {
      if (line === '') continue;
      if (line.startsWith('# ')) {
        const name = line.split(' ', 3)[2] ?? '';
        if (name !== currentName || !current) {
          currentName = name;
          current = families.get(name);
          if (!current) families.set(name, (current = { head: [], samples: new Map(), labelSets: new Set() }));
        }
        if (current.head.length < 2 && !current.head.includes(line)) current.head.push(line);
        continue;
      }
      const space = line.lastIndexOf(' ');
      const value = Number(line.slice(space + 1));
      if (!current) {
        const name = line.slice(0, space).split('{', 1)[0]!;
        current = families.get(name);
        if (!current) families.set(name, (current = { head: [], samples: new Map(), labelSets: new Set() }));
        currentName = name;
      }
      const series = cappedSeries(current, line.slice(0, space));
      const before = current.samples.get(series);
      current.samples.set(series, before === undefined ? value : HIGHEST.has(currentName) ? Math.max(before, value) : before + value);
    }
  }
  const out: string[] = [];
  for (const f of families.values()) {
    out.push(...f.head);
    for (const [series, value] of f.samples) out.push(`${series} ${value}`);
  }
  return `${out.join('\n')}\n`;
}

/**
 * The monotonic families of a Prometheus text (counters; histograms, whose buckets, sums and counts only grow),
 * gauges left out: what a supervisor keeps of a worker that died, so the gateway's summed counters never go back
 * when the worker restarts from 0 (ADR 0033).
 */
export function monotonicOnly(text: string): string {
  const out: string[] = [];
  let keep = false;
  for (const line of text.split('\n')) {
    if (line.startsWith('# TYPE ')) {
      const type = line.slice(line.lastIndexOf(' ') + 1);
      keep = type === 'counter' || type === 'histogram';
    }
    if (keep && line !== '') out.push(line);
  }
  return out.length ? `${out.join('\n')}\n` : '';
}
