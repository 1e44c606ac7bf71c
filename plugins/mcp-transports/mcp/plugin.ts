import { defineMcpTransport } from '../../lib/slots/mcp.ts';
import type { TargetAddressConfig } from '../../lib/mcp/target-address.ts';
import schema from './schema.json' with { type: 'json' };

/**
 * `mcp`: a streamable-HTTP MCP server. Legacy-era targets keep their session id per client session (and in the sealed
 * client id); a target that answers `server/discover` with the 2026-07-28 revision is spoken to in that revision
 * (for 2026-07-28 clients), probed once per config generation.
 */
export default defineMcpTransport<TargetAddressConfig>({
  key: 'mcp',
  description: 'Connect to an MCP server over streamable HTTP.',
  schema,
  // The MCP SDK client transports load only when a config has a streamable-HTTP target.
  async compile(config, ctx) {
    const { compileStreamableTransport } = await import('./mcp.ts');
    return compileStreamableTransport(config, ctx);
  },
});
