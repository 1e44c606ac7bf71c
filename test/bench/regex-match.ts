// The cost of one route-match regex test, before and after docs/adr/0021: a benchmark, not a test.
//
//   node test/bench/regex-match.ts
//
// "before": the pattern as route matching compiled it until then (`^(?:…)$`, `u` flag), measured before any V8 flag
// is set. "after": `compileUserRegex(…, { whole: true })` (no `u` flag, backtracking with the linear-time fallback
// enabled process-wide), measured after the SDK module set the flags. Inputs: four typical request paths.
const PATTERN = '/api/v[0-9]+/users/[0-9]+';
const INPUTS = ['/api/v1/users/12345', '/api/v2/orders/abc', '/healthz', '/api/v1/users/12345/profile/settings/long/path/segment'];
const N = 2_000_000;

function bench(label: string, test: (s: string) => boolean): void {
  let hits = 0;
  for (let i = 0; i < 200_000; i++) if (test(INPUTS[i & 3]!)) hits++;
  const rounds: number[] = [];
  for (let r = 0; r < 5; r++) {
    const start = process.hrtime.bigint();
    for (let i = 0; i < N; i++) if (test(INPUTS[i & 3]!)) hits++;
    rounds.push(Number(process.hrtime.bigint() - start) / N);
  }
  rounds.sort((a, b) => a - b);
  console.log(`${label.padEnd(44)} median ${(rounds[2]! / 1000).toFixed(3)} µs/test  (min ${(rounds[0]! / 1000).toFixed(3)})  [${hits}]`);
}

const before = new RegExp(`^(?:${PATTERN})$`, 'u');
bench('before: new RegExp(^(?:…)$, u)', (s) => before.test(s));

const { compileUserRegex } = await import('../../kernel/sdk/regex.ts');
const after = compileUserRegex(PATTERN, { whole: true });
if (typeof after === 'string') throw new Error(after);
bench('after: compileUserRegex(…, { whole: true })', (s) => after.test(s));
const unicodeAfterFlags = new RegExp(`^(?:${PATTERN})$`, 'u');
bench('u-flag regex with the flags set (reference)', (s) => unicodeAfterFlags.test(s));
