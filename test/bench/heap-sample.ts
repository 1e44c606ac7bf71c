// Where a process's allocations come from, collected ones included (V8's sampling heap profiler with the flags
// `--heap-prof` does not set): a tool, not a test. docs/perf.md "Plain route CPU, session 9".
//
// Preload into a gateway under load, e.g. with plain-ab.ts:
//   PLAIN_AB_NODE_ARGS="--import /abs/path/test/bench/heap-sample.ts" node test/bench/plain-ab.ts --rounds 1 --requests 40000 x=.
// It samples from HEAP_SAMPLE_DELAY_MS (default 9000) after start for HEAP_SAMPLE_MS (6000), one sample per 256
// bytes allocated, and writes HEAP_SAMPLE_DIR (default the OS temp folder)/heap-<pid>.heapprofile.
// HEAP_SAMPLE_MINOR=0 leaves out what died young (collected by a scavenge): the profile is then what survived one, i.e.
// was promoted (live at the end, or collected by a mark-compact), e.g. per-key state touched once per 1,000 requests.
// Summarise one: node test/bench/heap-sample.ts summarize FILE [callers shown, 1] [rows, 40]
import { Session } from 'node:inspector';
import { readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

interface Frame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: Frame;
  children: ProfileNode[];
}
interface Profile {
  head: ProfileNode;
  samples: { nodeId: number; size: number }[];
}

const where = (f: Frame): string => `${f.functionName || '(anonymous)'} ${f.url.replace(/.*\/(node_modules|kernel|plugins|bin)\//, '$1/')}:${f.lineNumber}`;

function summarize(file: string, depth: number, rows: number): void {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const chains = new Map<number, string>();
  const walk = (node: ProfileNode, callers: string[]): void => {
    chains.set(node.id, [where(node.callFrame), ...callers.slice(0, depth)].join(' <- '));
    for (const child of node.children) walk(child, [where(node.callFrame), ...callers]);
  };
  walk(profile.head, []);
  const bytes = new Map<string, number>();
  let total = 0;
  for (const s of profile.samples) {
    const key = chains.get(s.nodeId) ?? '?';
    bytes.set(key, (bytes.get(key) ?? 0) + s.size);
    total += s.size;
  }
  console.log(`sampled ${(total / 1024).toFixed(0)} KiB`);
  for (const [key, n] of [...bytes].sort((a, b) => b[1] - a[1]).slice(0, rows)) console.log(`${((100 * n) / total).toFixed(1)}%  ${key}`);
}

if (process.argv[2] === 'summarize' && import.meta.filename === process.argv[1]) {
  summarize(process.argv[3]!, Number(process.argv[4] ?? 1), Number(process.argv[5] ?? 40));
} else {
  const session = new Session();
  session.connect();
  const post = (method: string, params: object = {}): Promise<{ profile?: Profile }> =>
    new Promise((resolve, reject) => session.post(method, params, (err, res) => (err ? reject(err) : resolve(res as { profile?: Profile }))));
  setTimeout(() => {
    void post('HeapProfiler.startSampling', { samplingInterval: 256, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: process.env.HEAP_SAMPLE_MINOR !== '0' }).then(() => {
      setTimeout(() => {
        void post('HeapProfiler.stopSampling').then(({ profile }) => {
          writeFileSync(join(process.env.HEAP_SAMPLE_DIR ?? tmpdir(), `heap-${process.pid}.heapprofile`), JSON.stringify(profile));
        });
      }, Number(process.env.HEAP_SAMPLE_MS ?? 6000)).unref();
    });
  }, Number(process.env.HEAP_SAMPLE_DELAY_MS ?? 9000)).unref();
}
