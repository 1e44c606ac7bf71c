import { defineBackendAuth } from '../../lib/slots/backend-auth.ts';
import type { AzureConfig } from './azure.ts';
import schema from './schema.json' with { type: 'json' };

/** `azure` (neutral name `cloudAuthC`): a Microsoft Entra access token on every upstream request. */
export default defineBackendAuth<AzureConfig>({
  key: 'azure',
  aliases: ['cloudAuthC'],
  description: 'Send a Microsoft Entra access token (client secret, managed identity, workload identity or developer sign-in).',
  schema,
  async compile(config, ctx) {
    // @azure/identity loads only when a config uses this variant.
    const { createAzureAuth } = await import('./azure.ts');
    try {
      return createAzureAuth(config, ctx.resources, ctx.spans);
    } catch (err) {
      // The credential constructors check their arguments (an invalid tenant id, say).
      return ctx.fail((err as Error).message);
    }
  },
});
