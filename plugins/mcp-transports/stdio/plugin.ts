import { defineMcpTransport } from '../../lib/slots/mcp.ts';
import schema from './schema.json' with { type: 'json' };

interface StdioConfig {
  cmd: string;
  args?: string[];
  env?: Record<string, string>;
  clearEnv?: boolean;
  maxProcesses?: number;
}

/** Children one stdio target may run at once when `maxProcesses` is not set (docs/security.md). */
export const DEFAULT_MAX_PROCESSES = 64;

/** `stdio`: an MCP server run as a child process, one per client session (BEHAVIOUR.md DECIDED 15). */
export default defineMcpTransport<StdioConfig>({
  key: 'stdio',
  description: 'Run a local MCP server process and talk to it over stdin/stdout (one process per client session).',
  schema,
  async compile(config, ctx) {
    // The implementation loads only when a config uses this transport.
    const { StdioUpstream } = await import('./stdio.ts');
    const args = config.args ?? [];
    const spec = { cmd: config.cmd, args, env: config.env ?? {}, cwd: ctx.cwd, clearEnv: config.clearEnv === true };
    const max = config.maxProcesses ?? DEFAULT_MAX_PROCESSES;
    // One budget for the whole gateway (every worker counts into it), kept while the target is unchanged: sessions
    // that survive a reload keep holding their slots; a changed target starts a new count.
    const budget = { key: `mcp-stdio:${JSON.stringify([ctx.path, spec, max])}`, max };
    const processes = ctx.processes;
    return {
      kind: 'stdio',
      // The command only: errors naming the target reach MCP clients, and arguments may carry secrets (tokens,
      // database URLs).
      describe: config.cmd,
      connect: (options) => new StdioUpstream(spec, processes, budget, options.logger),
    };
  },
});
