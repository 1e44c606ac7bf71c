// MCP conformance (server mode) through the gateway vs. directly (issue 4, "Done when"):
//   node test/conformance/run.ts            (npm run conformance)
// Starts server-everything in streamable-HTTP mode and an in-process gateway with one `mcp` target pointing at it
// (no auth), runs `@modelcontextprotocol/conformance server` against both with the same baseline, prints both
// summaries, and exits non-zero when the gateway passes fewer checks than the upstream does directly.
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startEverything, startMcpGateway } from '../mcp/harness.ts';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = join(HERE, '../..');
const CLI = join(ROOT, 'node_modules/@modelcontextprotocol/conformance/dist/index.js');
const BASELINE = join(HERE, 'server-everything.baseline.yml');

interface Run {
  readonly label: string;
  readonly exitCode: number;
  readonly passed: number;
  readonly failed: number;
  /** Per scenario: passed/failed check counts. */
  readonly scenarios: Map<string, string>;
  readonly summary: string;
}

function runSuite(label: string, url: string): Promise<Run> {
  const out = mkdtempSync(join(tmpdir(), `conformance-${label}-`));
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, 'server', '--url', url, '--expected-failures', BASELINE, '-o', out], {
      cwd: out,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let text = '';
    child.stdout.on('data', (c: Buffer) => (text += c.toString()));
    child.stderr.on('data', (c: Buffer) => (text += c.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      const start = text.indexOf('=== SUMMARY ===');
      const summary = start === -1 ? text.slice(-4000) : text.slice(start);
      const total = /Total: (\d+) passed, (\d+) failed/.exec(summary);
      const scenarios = new Map<string, string>();
      for (const m of summary.matchAll(/^[✓✗] ([\w-]+): (\d+ passed, \d+ failed)/gmu)) scenarios.set(m[1]!, m[2]!);
      resolve({ label, exitCode: code ?? 1, passed: Number(total?.[1] ?? 0), failed: Number(total?.[2] ?? 0), scenarios, summary });
    });
  });
}

const upstream = await startEverything('streamableHttp');
let exit = 1;
try {
  const gateway = await startMcpGateway({ targets: [{ name: 'everything', mcp: { host: '127.0.0.1', port: upstream.port, path: '/mcp' } }] });
  try {
    const direct = await runSuite('direct', `http://127.0.0.1:${upstream.port}/mcp`);
    const through = await runSuite('gateway', gateway.mcpUrl.href);
    for (const run of [direct, through]) {
      console.log(`\n##### ${run.label} (${run.label === 'direct' ? `server-everything on :${upstream.port}` : `switchyard on :${gateway.port}`}) #####`);
      console.log(run.summary.trim());
      console.log(`conformance exit code with the baseline: ${run.exitCode}`);
    }
    const regressions = [...direct.scenarios].filter(([name, counts]) => through.scenarios.get(name) !== counts);
    console.log('\n##### comparison #####');
    console.log(`direct:  ${direct.passed} passed, ${direct.failed} failed`);
    console.log(`gateway: ${through.passed} passed, ${through.failed} failed`);
    for (const [name, counts] of regressions) console.log(`differs: ${name}: direct ${counts}, gateway ${through.scenarios.get(name) ?? 'not run'}`);
    if (direct.passed === 0) console.log('FAIL: the direct run passed nothing; the suite did not run');
    else if (through.passed < direct.passed) console.log('FAIL: the gateway passes fewer checks than the upstream directly');
    else {
      console.log('OK: the gateway passes at least as many checks as the upstream directly');
      exit = 0;
    }
  } finally {
    await gateway.stop();
  }
} finally {
  await upstream.stop();
}
process.exit(exit);
