// MCP conformance for the 2026-07-28 revision, through the gateway vs. directly (run by hand, not part of `npm test`):
//   npm i --prefix /tmp/conf-alpha @modelcontextprotocol/conformance@0.2.0-alpha.12
//   CONFORMANCE_CLI=/tmp/conf-alpha/node_modules/@modelcontextprotocol/conformance/dist/index.js \
//     node test/conformance/run-2026-07-28.ts
// Starts the SDK v2 fixture server (test/mcp/fixtures/fixture-v2.ts) and a gateway with one `mcp` target in front of
// it, runs `conformance server --requirements 2026-07-28` against both, prints both summaries, and exits non-zero
// when the gateway passes fewer checks. The alpha suite is not a dependency of the repository: pass its CLI path.
import { startV2Fixture } from '../mcp/fixtures/fixture-v2.ts';
import { compareRuns, runSuite } from './suite.ts';
import { startMcpGateway } from '../mcp/harness.ts';

const CLI = process.env.CONFORMANCE_CLI ?? '';
if (!CLI) {
  console.error('set CONFORMANCE_CLI to the dist/index.js of @modelcontextprotocol/conformance@0.2.0-alpha.12 (see the header of this file)');
  process.exit(2);
}

const fixture = await startV2Fixture();
let exit = 1;
try {
  const gateway = await startMcpGateway({ targets: [{ name: 'v2', mcp: { host: '127.0.0.1', port: fixture.port, path: '/mcp' } }] });
  try {
    const direct = await runSuite(CLI, 'direct', fixture.url.href, ['--requirements', '2026-07-28']);
    const through = await runSuite(CLI, 'gateway', gateway.mcpUrl.href, ['--requirements', '2026-07-28']);
    console.log(`\n##### direct (SDK v2 fixture on :${fixture.port}) #####\n${direct.summary.trim()}`);
    console.log(`\n##### gateway (switchyard on :${gateway.port}) #####\n${through.summary.trim()}`);
    exit = compareRuns(direct, through);
  } finally {
    await gateway.stop();
  }
} finally {
  await fixture.stop();
}
process.exit(exit);
