import { defineMcpTransport } from 'switchyard/sdk';
import { HttpTargetBinding } from '../../lib/mcp/http-target.ts';
import type { TargetAddressConfig } from '../../lib/mcp/target-address.ts';
import type { McpDiscovery, McpTransportInstance } from '../../lib/mcp/upstream-contract.ts';
import { ModernUpstream, probeDiscover } from './modern-upstream.ts';
import schema from './schema.json' with { type: 'json' };
import { StreamableUpstream } from './streamable-upstream.ts';

/**
 * `mcp`: a streamable-HTTP MCP server. Legacy-era targets keep their session id per client session (and in the sealed
 * client id); a target that answers `server/discover` with the 2026-07-28 revision is spoken to in that revision
 * (for modern clients), probed once per config generation.
 */
export default defineMcpTransport<TargetAddressConfig, McpTransportInstance>({
  key: 'mcp',
  description: 'Connect to an MCP server over streamable HTTP.',
  schema,
  compile(config, ctx) {
    const binding = new HttpTargetBinding(config, ctx, '/mcp');
    let probe: Promise<McpDiscovery | undefined> | undefined;
    return {
      kind: 'mcp',
      describe: binding.describe,
      configure: (policies) => binding.configure(policies),
      connect: (options) => {
        const { address, fetch } = binding.get();
        return options.modern ? new ModernUpstream(address.url, fetch, options) : new StreamableUpstream(address.url, fetch, options);
      },
      discover: (options) => {
        probe ??= (async () => {
          const { address, fetch } = binding.get();
          const outcome = await probeDiscover(address.url, fetch, options.headers);
          if (outcome.kind === 'unknown') {
            // Not a definite answer (unreachable, refused credentials): ask again next time.
            probe = undefined;
            options.logger.debug('MCP target did not answer server/discover; treating it as a legacy target for now', { reason: outcome.reason });
            return undefined;
          }
          options.logger.info('MCP target protocol era probed', { era: outcome.kind, target: binding.describe });
          return outcome.kind === 'modern' ? outcome.discovery : undefined;
        })();
        return probe;
      },
    };
  },
});
