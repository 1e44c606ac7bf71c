import { defineGuard } from '../../lib/slots/ai.ts';
import type { WebhookGuardConfig } from './webhook.ts';
import schema from './schema.json' with { type: 'json' };

/** `webhook`: ask an external guardrail service (Gloo-style webhook protocol) to pass, mask or reject. */
export default defineGuard<WebhookGuardConfig>({
  key: 'webhook',
  description: 'Send the messages to a guardrail webhook (`POST /request`, `POST /response`) that passes, masks or rejects them.',
  schema,
  async compile(config, ctx) {
    const { compileWebhookGuard } = await import('./webhook.ts');
    return compileWebhookGuard(config, ctx);
  },
});
