// The load loop shared by the LLM bench rows (`ai`, `keys`): every row POSTed in interleaved rounds, each round's
// CPU per request, req/s, c=1 p50 and failures kept on the row.
import type { Job, JobResult } from './load.ts';
import type { BenchKit } from './peers.ts';

export interface PostRow {
  readonly name: string;
  readonly url: string;
  readonly pids: number[];
  readonly cpu: number[];
  readonly rps: number[];
  readonly p50: number[];
  bad: number;
  errors: number;
}

/** Load every row for `kit.rounds` interleaved rounds; `label` names a row in the progress lines. */
export async function postRounds<R extends PostRow>(kit: BenchKit, rows: readonly R[], request: (r: R) => Pick<Job, 'numberedHeader'> & { headers: Record<string, string>; body: string }, label: (r: R) => string = (r) => r.name): Promise<void> {
  const jobs: Job[] = [];
  for (let round = 0; round < kit.rounds; round++) {
    for (const r of rows) {
      const { headers, body, numberedHeader } = request(r);
      jobs.push({
        url: r.url,
        method: 'POST',
        headers,
        numberedHeader,
        body,
        warmupS: round === 0 ? kit.warmupS : 0.3,
        connections: kit.connections,
        throughputS: kit.throughputS / kit.rounds,
        latencyS: kit.latencyS / kit.rounds,
        cpuPids: r.pids,
      });
    }
  }
  await kit.load(jobs, (res: JobResult) => {
    const r = rows[res.index % rows.length]!;
    const t = res.throughput;
    r.cpu.push(t.cpuUsPerReq);
    r.rps.push(t.rps);
    r.p50.push(res.latency?.p50 ?? NaN);
    for (const ph of [t, res.latency]) {
      if (!ph) continue;
      r.bad += ph.requests - ph.ok;
      r.errors += ph.errors + ph.timeouts;
    }
    console.log(`round ${Math.floor(res.index / rows.length) + 1}/${kit.rounds} ${label(r)}: ${kit.fmt(t.rps, 0)} req/s, ${kit.fmt(t.cpuUsPerReq, 0)} CPU µs/req, c=1 p50 ${kit.fmt(res.latency?.p50 ?? NaN, 3)} ms`);
  });
}
