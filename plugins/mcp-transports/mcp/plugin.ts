import { defineMcpTransport } from 'switchyard/sdk';
import { HttpTargetBinding } from '../../lib/mcp/http-target.ts';
import type { TargetAddressConfig } from '../../lib/mcp/target-address.ts';
import type { McpTransportInstance } from '../../lib/mcp/upstream-contract.ts';
import schema from './schema.json' with { type: 'json' };
import { StreamableUpstream } from './streamable-upstream.ts';

/** `mcp`: a streamable-HTTP MCP server; its session id is kept per client session (and in the sealed client id). */
export default defineMcpTransport<TargetAddressConfig, McpTransportInstance>({
  key: 'mcp',
  description: 'Connect to an MCP server over streamable HTTP.',
  schema,
  compile(config, ctx) {
    const binding = new HttpTargetBinding(config, ctx, '/mcp');
    return {
      kind: 'mcp',
      describe: binding.describe,
      configure: (policies) => binding.configure(policies),
      connect: (options) => {
        const { address, fetch } = binding.get();
        return new StreamableUpstream(address.url, fetch, options);
      },
    };
  },
});
