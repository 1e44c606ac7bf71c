import { defineGuard } from '../../lib/slots/ai.ts';
import type { BedrockGuardrailsConfig } from './bedrock-guardrails.ts';

/** `bedrockGuardrails` (neutral name `guardrailsGuard`): AWS Bedrock Guardrails' ApplyGuardrail API. */
export default defineGuard<BedrockGuardrailsConfig>({
  key: 'bedrockGuardrails',
  aliases: ['guardrailsGuard'],
  description: 'Check messages with an AWS Bedrock guardrail (ApplyGuardrail): blocked content is rejected, anonymized content masked.',
  schema: {
    type: 'object',
    description: 'AWS Bedrock Guardrails: the message texts go to the ApplyGuardrail API; a `BLOCKED` assessment rejects with the entry\'s `rejection`, an anonymizing intervention masks the texts.',
    properties: {
      guardrailIdentifier: { type: 'string', minLength: 1, description: 'The guardrail\'s id (or ARN).' },
      guardrailVersion: { type: 'string', minLength: 1, description: 'The guardrail version: `DRAFT` or a version number such as `1`.' },
      region: {
        type: 'string',
        minLength: 1,
        pattern: '^[a-z0-9-]+$',
        'x-hint': 'an AWS region such as `us-east-1`',
        description: 'AWS region of the guardrail: the gateway calls `https://bedrock-runtime.<region>.amazonaws.com`.',
      },
      policies: {
        'x-slot': 'backendPolicies',
        description: 'Connection policies: `backendAuth` (default: `aws` with the default credential chain, signing for service `bedrock` in `region`) and `backendTLS`. Any other policy is an error.',
      },
      host: {
        type: 'string',
        minLength: 1,
        description: 'Another endpoint serving the same API (a VPC endpoint, a test stand-in): `https://host[:port]` or `host:port` (plain HTTP). Default: `AWS_ENDPOINT_URL_BEDROCK_RUNTIME`, else `AWS_ENDPOINT_URL`, else the regional endpoint.',
      },
    },
    required: ['guardrailIdentifier', 'guardrailVersion', 'region'],
    additionalProperties: false,
  },
  async compile(config, ctx) {
    const { compileBedrockGuardrails } = await import('./bedrock-guardrails.ts');
    return compileBedrockGuardrails(config, ctx);
  },
});
