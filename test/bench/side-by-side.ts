// Two targets loaded at once, each by its own load generator at half the connections, for interleaved rounds (ADR
// 0109): both gateways are pinned to the same core, so whatever the machine does during a round (other tenants,
// frequency, the shared core's caches) it does to both, and the ratio of their req/s is the ratio of what a request
// costs each. Loaded one after the other, as postRounds does, two rows of the same code moved ±15 % per run here.
import type { Job } from './load.ts';
import type { BenchKit } from './peers.ts';
import type { PostRow } from './post-rounds.ts';

export interface SideBySide {
  /** Per round: b's req/s ÷ a's, b's CPU per request ÷ a's. */
  readonly rps: number[];
  readonly cpu: number[];
  /** Requests answered other than 2xx, or failed, in either. */
  readonly bad: number;
}

/** Load `a` and `b` at once for `kit.rounds` rounds; which one's generator starts first alternates. */
export async function sideBySide<R extends PostRow>(kit: BenchKit, a: R, b: R, request: (r: R) => Pick<Job, 'numberedHeader'> & { headers: Record<string, string>; body: string }): Promise<SideBySide> {
  const out = { rps: [] as number[], cpu: [] as number[], bad: 0 };
  const job = (r: R, round: number): Job => ({
    url: r.url,
    method: 'POST',
    ...request(r),
    warmupS: round === 0 ? kit.warmupS : 0.3,
    connections: Math.max(1, Math.round(kit.connections / 2)),
    throughputS: kit.throughputS / kit.rounds,
    latencyS: 0,
    cpuPids: r.pids,
  });
  for (let round = 0; round < kit.rounds; round++) {
    const [ra, rb] = round % 2 === 0 ? await Promise.all([kit.load([job(a, round)]), kit.load([job(b, round)])]) : (await Promise.all([kit.load([job(b, round)]), kit.load([job(a, round)])])).reverse();
    const ta = ra![0]!.throughput;
    const tb = rb![0]!.throughput;
    out.rps.push(tb.rps / ta.rps);
    out.cpu.push(tb.cpuUsPerReq / ta.cpuUsPerReq);
    out.bad += ta.requests - ta.ok + ta.errors + ta.timeouts + tb.requests - tb.ok + tb.errors + tb.timeouts;
    console.log(`side by side ${round + 1}/${kit.rounds} ${a.name} | ${b.name}: ${kit.fmt(ta.rps, 0)} | ${kit.fmt(tb.rps, 0)} req/s (${kit.fmt(tb.rps / ta.rps, 3)}), CPU µs/req ${kit.fmt(ta.cpuUsPerReq, 0)} | ${kit.fmt(tb.cpuUsPerReq, 0)}`);
  }
  return out;
}
