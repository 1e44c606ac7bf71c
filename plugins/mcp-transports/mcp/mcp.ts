import type { CompileContext } from 'switchyard/sdk';
import { HttpTargetBinding } from '../../lib/mcp/http-target.ts';
import type { TargetAddressConfig } from '../../lib/mcp/target-address.ts';
import type { McpDiscovery, McpTransportInstance } from '../../lib/mcp/upstream-contract.ts';
import { Upstream20260728, probeDiscover } from './upstream-2026-07-28.ts';
import { StreamableUpstream } from './streamable-upstream.ts';

/** Compile an `mcp` (streamable HTTP) target: loaded on demand by plugin.ts. */
export function compileStreamableTransport(config: TargetAddressConfig, ctx: CompileContext): McpTransportInstance {
  const binding = new HttpTargetBinding(config, ctx, '/mcp');
  let probe: Promise<McpDiscovery | undefined> | undefined;
  return {
    kind: 'mcp',
    describe: binding.describe,
    configure: (policies) => binding.configure(policies),
    connect: (options) => {
      if (options.revision === '2026-07-28') {
        const { address, fetch } = binding.get(options.onAttempt);
        return new Upstream20260728(address.url, fetch, options);
      }
      // Legacy-era targets: the lean client on the pool itself (it runs `options.onAttempt` on every request).
      const { address, target, deadlines } = binding.get();
      return new StreamableUpstream(target, address.path, options, undefined, deadlines);
    },
    discover: (options) => {
      probe ??= (async () => {
        const { address, fetch } = binding.get(options.onAttempt);
        const outcome = await probeDiscover(address.url, fetch, options.headers);
        if (outcome.kind === 'unknown') {
          // Not a definite answer (unreachable, refused credentials): ask again next time.
          probe = undefined;
          options.logger.debug('MCP target did not answer server/discover; treating it as a legacy target for now', { reason: outcome.reason });
          return undefined;
        }
        options.logger.info('MCP target protocol era probed', { era: outcome.kind, target: binding.describe });
        return outcome.kind === '2026-07-28' ? outcome.discovery : undefined;
      })();
      return probe;
    },
  };
}
