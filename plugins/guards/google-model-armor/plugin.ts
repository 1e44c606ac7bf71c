import { defineGuard } from '../../lib/slots/ai.ts';
import type { ModelArmorConfig } from './google-model-armor.ts';
import schema from './schema.json' with { type: 'json' };

/** `googleModelArmor` (neutral name `modelArmorGuard`): Google Cloud Model Armor's sanitize APIs. */
export default defineGuard<ModelArmorConfig>({
  key: 'googleModelArmor',
  aliases: ['modelArmorGuard'],
  description: 'Check prompts and responses with a Google Cloud Model Armor template; any filter match rejects.',
  schema,
  async compile(config, ctx) {
    const { compileModelArmor } = await import('./google-model-armor.ts');
    return compileModelArmor(config, ctx);
  },
});
