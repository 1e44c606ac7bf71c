// The 2025-era conformance suite against server-everything (streamable HTTP) directly and through a gateway with one
// `mcp` target in front of it: shared by `npm run conformance` (run.ts) and `test/mcp/conformance.test.ts`.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runSuite } from './suite.ts';
import type { Run } from './suite.ts';
import { startEverything, startMcpGateway } from '../mcp/harness.ts';

const HERE = dirname(fileURLToPath(import.meta.url));
const CLI = join(HERE, '../../node_modules/@modelcontextprotocol/conformance/dist/index.js');
const BASELINE = join(HERE, 'server-everything.baseline.yml');
/** The same list without the scenarios the gateway answers itself (DNS-rebinding protection, ADR 0010). */
const GATEWAY_BASELINE = join(HERE, 'gateway.baseline.yml');

export interface EverythingRuns {
  readonly direct: Run;
  readonly through: Run;
  readonly upstreamPort: number;
  readonly gatewayPort: number;
}

/** Start server-everything and the gateway, run the suite against each, stop both. */
export async function runEverythingBothWays(): Promise<EverythingRuns> {
  const upstream = await startEverything('streamableHttp');
  try {
    const gateway = await startMcpGateway({ targets: [{ name: 'everything', mcp: { host: '127.0.0.1', port: upstream.port, path: '/mcp' } }] });
    try {
      const direct = await runSuite(CLI, 'direct', `http://127.0.0.1:${upstream.port}/mcp`, ['--expected-failures', BASELINE]);
      const through = await runSuite(CLI, 'gateway', gateway.mcpUrl.href, ['--expected-failures', GATEWAY_BASELINE]);
      return { direct, through, upstreamPort: upstream.port, gatewayPort: gateway.port };
    } finally {
      await gateway.stop();
    }
  } finally {
    await upstream.stop();
  }
}
