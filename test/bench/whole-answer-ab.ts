// The stage ADR 0058 changed, alone: an answer fetched and read whole with undici's `request()` + `readCapped` (what
// the `ai` backend did) against `pool.dispatch` with `WholeAnswer`, from a fixed-answer upstream in this process, C
// calls in flight. Process CPU µs per call (the upstream's share is the same for both) in interleaved rounds, and
// heap bytes allocated per call with `--trace-gc-nvp` piped through `node test/bench/ai-micro-gc.ts` (AI_MICRO_GC=1,
// AI_MICRO_REQUESTS=N).
//
//   node test/bench/whole-answer-ab.ts   (WHOLE_AB_N per batch, default 4,000; WHOLE_AB_ROUNDS, default 10)
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import type { Dispatcher } from 'undici';
import { readCapped } from '../../kernel/sdk/index.ts';
import { undiciClient } from '../../kernel/upstream/undici-core.ts';
import { WholeAnswer } from '../../kernel/upstream/whole-answer.ts';
import { SMALL_ANSWER } from './llm-bodies.ts';

// undici's `request()` on a pool made without undici's index (which adds it to every dispatcher), as the gateway did.
const apiRequest = createRequire(import.meta.url)('undici/lib/api/api-request.js') as (this: Dispatcher, options: Dispatcher.RequestOptions) => Promise<Dispatcher.ResponseData>;
const poolRequest = (pool: Dispatcher, options: Dispatcher.RequestOptions): Promise<Dispatcher.ResponseData> => apiRequest.call(pool, options);

const N = Number(process.env.WHOLE_AB_N ?? process.env.AI_MICRO_REQUESTS) || 4000;
const ROUNDS = Number(process.env.WHOLE_AB_ROUNDS) || 10;
const C = 50;
const LIMIT = 32 * 1024 * 1024;
const answer = Buffer.from(SMALL_ANSWER);
const upstream = createServer({ keepAliveTimeout: 65_000 }, (req, res) => {
  req.resume();
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(answer.length) });
    res.end(answer);
  });
});
await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
const pool = new (undiciClient().Pool)(`http://127.0.0.1:${(upstream.address() as AddressInfo).port}`, { connections: C, keepAliveTimeout: 60_000 });
const options: Dispatcher.DispatchOptions = { path: '/v1/chat/completions', method: 'POST', headers: { host: 'upstream', 'content-type': 'application/json' }, body: Buffer.from('{}') };

const ways: Record<string, () => Promise<number>> = {
  'request() + readCapped': async () => {
    const res = await poolRequest(pool, options);
    return (await readCapped(res.body, LIMIT)).length;
  },
  'dispatch + WholeAnswer': async () => {
    const handler = new WholeAnswer(LIMIT, null);
    pool.dispatch(options, handler);
    const res = await handler.promise;
    return (res.body as Buffer).length;
  },
};

async function batch(call: () => Promise<number>): Promise<void> {
  let next = 0;
  const one = async (): Promise<void> => {
    while (next++ < N) if ((await call()) !== answer.length) throw new Error('short answer');
  };
  await Promise.all(Array.from({ length: C }, one));
}

const us = new Map<string, number[]>(Object.keys(ways).map((k) => [k, []]));
for (const call of Object.values(ways)) await batch(call);
if (process.env.AI_MICRO_GC) console.log('@@warm');
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, call] of Object.entries(ways)) {
    const c0 = process.cpuUsage();
    await batch(call);
    const c = process.cpuUsage(c0);
    us.get(name)!.push((c.user + c.system) / N);
    if (process.env.AI_MICRO_GC) console.log(`@@batch ${name}`);
  }
}
const median = (a: number[]): number => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)]!;
console.log(`\n${N} calls per batch, ${ROUNDS} rounds, c=${C}; CPU µs/call of the whole process (client + upstream)`);
console.log('| way | median | range |\n|---|---:|---:|');
for (const [name, v] of us) console.log(`| ${name} | ${median(v).toFixed(1)} | ${Math.min(...v).toFixed(0)}-${Math.max(...v).toFixed(0)} |`);
const [a, b] = [...us.values()];
const d = a!.map((v, i) => v - b![i]!);
console.log(`per-round difference (request() − dispatch): median ${median(d).toFixed(1)} µs (${Math.min(...d).toFixed(1)} to ${Math.max(...d).toFixed(1)})`);
await pool.close();
upstream.close();
