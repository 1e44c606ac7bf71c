import { defineGuard } from '../../lib/slots/ai.ts';
import type { ModerationGuardConfig } from './openai-moderation.ts';
import schema from './schema.json' with { type: 'json' };

/** `openAIModeration` (neutral name `moderationGuard`): reject what OpenAI's moderation endpoint flags. */
export default defineGuard<ModerationGuardConfig>({
  key: 'openAIModeration',
  aliases: ['moderationGuard'],
  description: 'Reject messages that the OpenAI moderation endpoint (`/v1/moderations`) flags.',
  schema,
  async compile(config, ctx) {
    const { compileModerationGuard } = await import('./openai-moderation.ts');
    return compileModerationGuard(config, ctx);
  },
});
