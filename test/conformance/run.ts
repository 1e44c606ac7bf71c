// MCP conformance (server mode) through the gateway vs. directly (issue 4, "Done when"):
//   node test/conformance/run.ts            (npm run conformance)
// Starts server-everything in streamable-HTTP mode and an in-process gateway with one `mcp` target pointing at it
// (no auth), runs `@modelcontextprotocol/conformance server` against both (the gateway's baseline lacks the scenarios
// it answers itself), prints both summaries, and exits non-zero when the gateway passes fewer checks than the upstream does directly.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { compareRuns, runSuite } from './suite.ts';
import { startEverything, startMcpGateway } from '../mcp/harness.ts';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = join(HERE, '../..');
const CLI = join(ROOT, 'node_modules/@modelcontextprotocol/conformance/dist/index.js');
const BASELINE = join(HERE, 'server-everything.baseline.yml');
/** The same list without the scenarios the gateway answers itself (DNS-rebinding protection, ADR 0010). */
const GATEWAY_BASELINE = join(HERE, 'gateway.baseline.yml');

const upstream = await startEverything('streamableHttp');
let exit = 1;
try {
  const gateway = await startMcpGateway({ targets: [{ name: 'everything', mcp: { host: '127.0.0.1', port: upstream.port, path: '/mcp' } }] });
  try {
    const direct = await runSuite(CLI, 'direct', `http://127.0.0.1:${upstream.port}/mcp`, ['--expected-failures', BASELINE]);
    const through = await runSuite(CLI, 'gateway', gateway.mcpUrl.href, ['--expected-failures', GATEWAY_BASELINE]);
    for (const run of [direct, through]) {
      console.log(`\n##### ${run.label} (${run.label === 'direct' ? `server-everything on :${upstream.port}` : `switchyard on :${gateway.port}`}) #####`);
      console.log(run.summary.trim());
      console.log(`conformance exit code with the baseline: ${run.exitCode}`);
    }
    exit = compareRuns(direct, through);
  } finally {
    await gateway.stop();
  }
} finally {
  await upstream.stop();
}
process.exit(exit);
