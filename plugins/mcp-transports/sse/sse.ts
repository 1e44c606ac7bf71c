import type { CompileContext } from 'switchyard/sdk';
import { HttpTargetBinding } from '../../lib/mcp/http-target.ts';
import type { TargetAddressConfig } from '../../lib/mcp/target-address.ts';
import type { McpTransportInstance } from '../../lib/mcp/upstream-contract.ts';
import { SseUpstream } from './sse-upstream.ts';

/** Compile one `sse` target: its address and HTTP binding; each client session gets its own `SseUpstream`. */
export function compileSseTransport(config: TargetAddressConfig, ctx: CompileContext): McpTransportInstance {
  const binding = new HttpTargetBinding(config, ctx, '/sse');
  return {
    kind: 'sse',
    describe: binding.describe,
    configure: (policies) => binding.configure(policies),
    connect: (options) => {
      const { address, fetch } = binding.get(options.onAttempt);
      return new SseUpstream(address.url, fetch, options);
    },
  };
}
