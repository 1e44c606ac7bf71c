// Reads `AI_MICRO_GC=1 node --trace-gc-nvp test/bench/ai-micro.ts …` on stdin: the bytes the collections report as
// allocated between batch markers, as KiB per request of each target (the whole process: client, gateways, upstream;
// the same client and upstream for every target, so differences between targets are the gateways').
import { createInterface } from 'node:readline';

const N = Number(process.env.AI_MICRO_REQUESTS) > 0 ? Number(process.env.AI_MICRO_REQUESTS) : 2000;
const perTarget = new Map<string, number[]>();
let allocated = 0;
for await (const line of createInterface({ input: process.stdin })) {
  const m = / allocated=(\d+) /.exec(line);
  if (m) allocated += Number(m[1]);
  else if (line === '@@warm') allocated = 0;
  else if (line.startsWith('@@batch ')) {
    const name = line.slice(8);
    (perTarget.get(name) ?? perTarget.set(name, []).get(name)!).push(allocated / N / 1024);
    allocated = 0;
  } else if (!line.includes('gc=')) console.log(line);
}
console.log('\n| target | KiB allocated/request (median) | range |\n|---|---:|---:|');
const median = (a: number[]): number => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)]!;
for (const [name, v] of perTarget) if (v.length) console.log(`| ${name} | ${median(v).toFixed(1)} | ${Math.min(...v).toFixed(1)}-${Math.max(...v).toFixed(1)} |`);
