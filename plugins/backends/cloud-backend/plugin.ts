import { defineBackend } from 'switchyard/sdk';
import { backendAuthSlot } from '../../lib/slots/backend-auth.ts';
import type { AgentRuntimeConfig } from './cloud-backend.ts';
import schema from './schema.json' with { type: 'json' };

export interface CloudBackendConfig {
  agentRuntime?: AgentRuntimeConfig;
  agentCore?: AgentRuntimeConfig;
}

/** `cloudBackend` (AWS name `aws`): a cloud agent runtime; today AWS Bedrock AgentCore (`agentRuntime` = `agentCore`). */
export default defineBackend<CloudBackendConfig>({
  key: 'cloudBackend',
  aliases: ['aws'],
  description: 'A cloud agent runtime: AWS Bedrock AgentCore (`agentRuntime`/`agentCore`), SigV4-signed.',
  schema,
  // Signs with the `aws` variant of `backendAuth` unless a backendAuth policy applies.
  slots: [backendAuthSlot],
  async compile(value, ctx) {
    const field = value.agentRuntime ? 'agentRuntime' : 'agentCore';
    // The signing libraries load only when a config uses this backend.
    const { compileAgentRuntime } = await import('./cloud-backend.ts');
    return compileAgentRuntime((value.agentRuntime ?? value.agentCore)!, field, ctx);
  },
});
