import { defineMcpTransport } from 'switchyard/sdk';
import { HttpTargetBinding } from '../../lib/mcp/http-target.ts';
import type { TargetAddressConfig } from '../../lib/mcp/target-address.ts';
import type { McpTransportInstance } from '../../lib/mcp/upstream-contract.ts';
import schema from './schema.json' with { type: 'json' };
import { SseUpstream } from './sse-upstream.ts';

/** `sse`: a legacy (2024-11-05 HTTP+SSE) MCP server. */
export default defineMcpTransport<TargetAddressConfig, McpTransportInstance>({
  key: 'sse',
  description: 'Connect to a legacy MCP server over server-sent events (GET stream + POST endpoint).',
  schema,
  compile(config, ctx) {
    const binding = new HttpTargetBinding(config, ctx, '/sse');
    return {
      kind: 'sse',
      describe: binding.describe,
      configure: (policies) => binding.configure(policies),
      connect: (options) => {
        const { address, fetch } = binding.get();
        return new SseUpstream(address.url, fetch, options);
      },
    };
  },
});
