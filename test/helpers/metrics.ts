// The Prometheus text format as tests read it from /metrics: samples with their labels, and the `# TYPE` lines.
import assert from 'node:assert/strict';
import { request } from 'undici';
import type { RunningGateway } from './gateway.ts';

/** One parsed sample of the Prometheus text format. */
interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Parse the text format: `# TYPE` lines into a type map, samples with their labels. */
export function parseMetrics(text: string): { types: Map<string, string>; samples: Sample[] } {
  const types = new Map<string, string>();
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (!line) continue;
    const type = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (type) {
      types.set(type[1]!, type[2]!);
      continue;
    }
    if (line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    assert.ok(m, `not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!;
    samples.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return { types, samples };
}

/** The value of the one sample called `name` whose labels include `labels`. */
export function value(parsed: { samples: Sample[] }, name: string, labels: Record<string, string> = {}): number | undefined {
  const found = parsed.samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  assert.ok(found.length <= 1, `${name} ${JSON.stringify(labels)} matches ${found.length} series`);
  return found[0]?.value;
}

export async function scrape(gw: RunningGateway): Promise<ReturnType<typeof parseMetrics>> {
  const res = await request(`${gw.statsUrl}/metrics`);
  assert.equal(res.statusCode, 200);
  return parseMetrics(await res.body.text());
}
