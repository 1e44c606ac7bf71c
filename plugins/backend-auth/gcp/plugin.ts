import { defineBackendAuth } from '../../lib/slots/backend-auth.ts';
import type { GcpConfig } from './gcp.ts';
import schema from './schema.json' with { type: 'json' };

/** `gcp` (neutral name `cloudAuthA`): a Google access or identity token on every upstream request. */
export default defineBackendAuth<GcpConfig>({
  key: 'gcp',
  aliases: ['cloudAuthA'],
  description: 'Send a Google access or identity token from the metadata server or a service-account key.',
  schema,
  async compile(config, ctx) {
    if (config.audience !== undefined && config.type !== 'idToken' && config.type !== 'identityToken') {
      ctx.warn('`audience` applies to identity tokens only; set `type: idToken` or remove it', ['audience']);
    }
    // google-auth-library loads only when a config uses this variant.
    const { createGcpAuth } = await import('./gcp.ts');
    return createGcpAuth(config, ctx.logger, ctx.resources, ctx.spans);
  },
});
