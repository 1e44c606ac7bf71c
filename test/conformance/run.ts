// MCP conformance (server mode) through the gateway vs. directly (issue 4, "Done when"):
//   node test/conformance/run.ts            (npm run conformance)
// Starts server-everything in streamable-HTTP mode and an in-process gateway with one `mcp` target pointing at it
// (no auth), runs `@modelcontextprotocol/conformance server` against both (the gateway's baseline lacks the scenarios
// it answers itself), prints both summaries, and exits non-zero when the gateway passes fewer checks than the upstream does directly.
// `npm test` asserts the same runs scenario by scenario (test/mcp/conformance.test.ts).
import { compareRuns } from './suite.ts';
import { runEverythingBothWays } from './everything.ts';

const { direct, through, upstreamPort, gatewayPort } = await runEverythingBothWays();
for (const run of [direct, through]) {
  console.log(`\n##### ${run.label} (${run.label === 'direct' ? `server-everything on :${upstreamPort}` : `switchyard on :${gatewayPort}`}) #####`);
  console.log(run.summary.trim());
  console.log(`conformance exit code with the baseline: ${run.exitCode}`);
}
process.exit(compareRuns(direct, through));
