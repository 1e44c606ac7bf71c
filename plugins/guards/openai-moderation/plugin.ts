import { defineGuard } from '../../lib/slots/ai.ts';
import type { ModerationGuardConfig } from './openai-moderation.ts';

/** `openAIModeration` (neutral name `moderationGuard`): reject what OpenAI's moderation endpoint flags. */
export default defineGuard<ModerationGuardConfig>({
  key: 'openAIModeration',
  aliases: ['moderationGuard'],
  description: 'Reject messages that the OpenAI moderation endpoint (`/v1/moderations`) flags.',
  schema: {
    type: 'object',
    description: 'OpenAI moderation: the message texts are sent to `POST /v1/moderations`; any flagged result rejects with the entry\'s `rejection`.',
    properties: {
      model: { type: 'string', minLength: 1, description: 'Moderation model. Default: `omni-moderation-latest`.' },
      policies: {
        'x-slot': 'backendPolicies',
        description: 'Connection policies for the moderation endpoint: `backendAuth` (the OpenAI API key: `backendAuth: {key: …}`) and `backendTLS`. Any other policy is an error.',
      },
      host: {
        type: 'string',
        minLength: 1,
        description: 'Another endpoint serving the same API (a proxy, a test stand-in): `https://host[:port]` or `host:port` (plain HTTP). Default: `https://api.openai.com`.',
      },
    },
    additionalProperties: false,
  },
  async compile(config, ctx) {
    const { compileModerationGuard } = await import('./openai-moderation.ts');
    return compileModerationGuard(config, ctx);
  },
});
