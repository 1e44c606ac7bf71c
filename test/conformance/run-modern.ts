// MCP conformance for the 2026-07-28 revision, through the gateway vs. directly (run by hand, not part of `npm test`):
//   npm i --prefix /tmp/conf-alpha @modelcontextprotocol/conformance@0.2.0-alpha.12
//   CONFORMANCE_CLI=/tmp/conf-alpha/node_modules/@modelcontextprotocol/conformance/dist/index.js \
//     node test/conformance/run-modern.ts
// Starts the SDK v2 fixture server (test/mcp/fixtures/fixture-v2.ts) and a gateway with one `mcp` target in front of
// it, runs `conformance server --requirements 2026-07-28` against both, prints both summaries, and exits non-zero
// when the gateway passes fewer checks. The alpha suite is not a dependency of the repository: pass its CLI path.
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startV2Fixture } from '../mcp/fixtures/fixture-v2.ts';
import { startMcpGateway } from '../mcp/harness.ts';

const CLI = process.env.CONFORMANCE_CLI;
if (!CLI) {
  console.error('set CONFORMANCE_CLI to the dist/index.js of @modelcontextprotocol/conformance@0.2.0-alpha.12 (see the header of this file)');
  process.exit(2);
}

interface Run {
  readonly passed: number;
  readonly failed: number;
  readonly scenarios: Map<string, string>;
  readonly summary: string;
}

function runSuite(label: string, url: string): Promise<Run> {
  const out = mkdtempSync(join(tmpdir(), `conformance-modern-${label}-`));
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI!, 'server', '--url', url, '--requirements', '2026-07-28', '-o', out], { cwd: out, stdio: ['ignore', 'pipe', 'pipe'] });
    let text = '';
    child.stdout.on('data', (c: Buffer) => (text += c.toString()));
    child.stderr.on('data', (c: Buffer) => (text += c.toString()));
    child.on('error', reject);
    child.on('close', () => {
      const start = text.indexOf('=== SUMMARY ===');
      const summary = start === -1 ? text.slice(-4000) : text.slice(start);
      const total = /Total: (\d+) passed, (\d+) failed/.exec(summary);
      const scenarios = new Map<string, string>();
      for (const m of summary.matchAll(/^[✓✗] ([\w-]+): (\d+ passed, \d+ failed)/gmu)) scenarios.set(m[1]!, m[2]!);
      resolve({ passed: Number(total?.[1] ?? 0), failed: Number(total?.[2] ?? 0), scenarios, summary });
    });
  });
}

const fixture = await startV2Fixture();
let exit = 1;
try {
  const gateway = await startMcpGateway({ targets: [{ name: 'v2', mcp: { host: '127.0.0.1', port: fixture.port, path: '/mcp' } }] });
  try {
    const direct = await runSuite('direct', fixture.url.href);
    const through = await runSuite('gateway', gateway.mcpUrl.href);
    console.log(`\n##### direct (SDK v2 fixture on :${fixture.port}) #####\n${direct.summary.trim()}`);
    console.log(`\n##### gateway (switchyard on :${gateway.port}) #####\n${through.summary.trim()}`);
    console.log('\n##### comparison #####');
    console.log(`direct:  ${direct.passed} passed, ${direct.failed} failed`);
    console.log(`gateway: ${through.passed} passed, ${through.failed} failed`);
    for (const [name, counts] of direct.scenarios) {
      if (through.scenarios.get(name) !== counts) console.log(`differs: ${name}: direct ${counts}, gateway ${through.scenarios.get(name) ?? 'not run'}`);
    }
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
  await fixture.stop();
}
process.exit(exit);
