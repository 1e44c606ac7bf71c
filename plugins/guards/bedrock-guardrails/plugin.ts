import { defineGuard } from '../../lib/slots/ai.ts';
import type { BedrockGuardrailsConfig } from './bedrock-guardrails.ts';
import schema from './schema.json' with { type: 'json' };

/** `bedrockGuardrails` (neutral name `guardrailsGuard`): AWS Bedrock Guardrails' ApplyGuardrail API. */
export default defineGuard<BedrockGuardrailsConfig>({
  key: 'bedrockGuardrails',
  aliases: ['guardrailsGuard'],
  description: 'Check messages with an AWS Bedrock guardrail (ApplyGuardrail): blocked content is rejected, anonymized content masked.',
  schema,
  async compile(config, ctx) {
    const { compileBedrockGuardrails } = await import('./bedrock-guardrails.ts');
    return compileBedrockGuardrails(config, ctx);
  },
});
