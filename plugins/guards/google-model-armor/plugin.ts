import { defineGuard } from '../../lib/slots/ai.ts';
import type { ModelArmorConfig } from './google-model-armor.ts';

/** `googleModelArmor` (neutral name `modelArmorGuard`): Google Cloud Model Armor's sanitize APIs. */
export default defineGuard<ModelArmorConfig>({
  key: 'googleModelArmor',
  aliases: ['modelArmorGuard'],
  description: 'Check prompts and responses with a Google Cloud Model Armor template; any filter match rejects.',
  schema: {
    type: 'object',
    description: 'Google Model Armor: requests go to `:sanitizeUserPrompt`, responses to `:sanitizeModelResponse` of the template; a filter with `MATCH_FOUND` rejects with the entry\'s `rejection`.',
    properties: {
      templateId: { type: 'string', minLength: 1, description: 'The Model Armor template id.' },
      projectId: { type: 'string', minLength: 1, description: 'The Google Cloud project of the template.' },
      location: {
        type: 'string',
        minLength: 1,
        pattern: '^[a-z0-9-]+$',
        'x-hint': 'a Google Cloud location such as `us-central1`',
        description: 'The template\'s location; the gateway calls `https://modelarmor.<location>.rep.googleapis.com`. Default: `us-central1`.',
      },
      policies: {
        'x-slot': 'backendPolicies',
        description: 'Connection policies: `backendAuth` (default: `gcp` access token from Application Default Credentials) and `backendTLS`. Any other policy is an error.',
      },
      host: {
        type: 'string',
        minLength: 1,
        description: 'Another endpoint serving the same API (a private endpoint, a test stand-in): `https://host[:port]` or `host:port` (plain HTTP). Default: the regional endpoint.',
      },
    },
    required: ['templateId', 'projectId'],
    additionalProperties: false,
  },
  async compile(config, ctx) {
    const { compileModelArmor } = await import('./google-model-armor.ts');
    return compileModelArmor(config, ctx);
  },
});
