// A test-only backend that compiles MCP targets through the `mcpTransport` slot, as the `mcp` backend does,
// and relays one JSON-RPC message per POST to the first target (one upstream connection per compiled
// backend, opened on the first request with that request's headers). Compiled transports are also
// published in `compiledTransports`, by target name, for tests that drive them directly.
import { defineBackend, jsonReply, localReply } from 'switchyard/sdk';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { McpTransportInstance, McpUpstream } from '../../../plugins/lib/mcp/upstream-contract.ts';

interface ProbeConfig {
  targets: { name: string; [transport: string]: unknown }[];
}

/** Transport instances compiled by the latest load, by target name. */
export const compiledTransports = new Map<string, McpTransportInstance>();

export const transportProbe = defineBackend<ProbeConfig>({
  key: 'mcpTransportProbe',
  description: 'Test only: compiles MCP targets and relays JSON-RPC messages to the first one.',
  schema: {
    type: 'object',
    additionalProperties: false,
    required: ['targets'],
    properties: {
      targets: {
        type: 'array',
        minItems: 1,
        description: 'MCP targets.',
        items: { 'x-slot': 'mcpTransport', required: ['name'], properties: { name: { type: 'string', description: 'Target name.' } }, description: 'One target.' },
      },
    },
  },
  async compile(config, ctx) {
    const instances: McpTransportInstance[] = [];
    for (let i = 0; i < config.targets.length; i++) {
      const target = config.targets[i]!;
      const { instance } = await ctx.compileVariant<McpTransportInstance>('mcpTransport', target, ['targets', i]);
      compiledTransports.set(target.name, instance);
      instances.push(instance);
    }
    let upstream: Promise<McpUpstream> | undefined;
    const pending = new Map<string | number, (m: JSONRPCMessage) => void>();
    return {
      protocol: 'mcp',
      async handle(ex) {
        const message = JSON.parse((await ex.bufferBody()).toString('utf8')) as JSONRPCMessage & { id?: string | number };
        upstream ??= (async () => {
          const headers: Record<string, string> = {};
          for (const [k, v] of Object.entries(ex.headers)) if (typeof v === 'string') headers[k] = v;
          const u = await instances[0]!.connect({ headers, logger: ctx.logger });
          u.onmessage = (m) => {
            const id = (m as { id?: string | number }).id;
            if (id !== undefined) pending.get(id)?.(m);
          };
          await u.start();
          return u;
        })();
        const u = await upstream;
        if (message.id === undefined) {
          await u.send(message);
          return localReply(202);
        }
        const answer = new Promise<JSONRPCMessage>((resolve) => pending.set(message.id!, resolve));
        await u.send(message);
        const reply = await answer;
        pending.delete(message.id);
        return jsonReply(200, reply);
      },
      dispose() {
        void upstream?.then((u) => u.close());
      },
    };
  },
});
