/**
 * Families whose threads' values are not added up: the highest one is the gateway's (the generation; the event-loop
 * delay of the worst thread, whose requests wait).
 */
const HIGHEST = new Set(['switchyard_config_generation', 'nodejs_eventloop_delay_seconds']);

interface Family {
  readonly head: string[];
  readonly samples: Map<string, number>;
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
          if (!current) families.set(name, (current = { head: [], samples: new Map() }));
        }
        if (current.head.length < 2 && !current.head.includes(line)) current.head.push(line);
        continue;
      }
      const space = line.lastIndexOf(' ');
      const series = line.slice(0, space);
      const value = Number(line.slice(space + 1));
      if (!current) {
        const name = series.split('{', 1)[0]!;
        current = families.get(name);
        if (!current) families.set(name, (current = { head: [], samples: new Map() }));
        currentName = name;
      }
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
