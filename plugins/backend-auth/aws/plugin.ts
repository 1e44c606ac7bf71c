import { defineBackendAuth } from '../../lib/slots/backend-auth.ts';
import type { AwsConfig } from './aws.ts';
import schema from './schema.json' with { type: 'json' };

/** `aws` (neutral name `cloudAuthB`): AWS Signature Version 4 on every upstream attempt. */
export default defineBackendAuth<AwsConfig>({
  key: 'aws',
  aliases: ['cloudAuthB'],
  description: 'Sign upstream requests with AWS Signature Version 4 (explicit keys or the default credential chain).',
  schema,
  async compile(config, ctx) {
    if (config.accessKeyId !== undefined && config.secretAccessKey === undefined) ctx.fail('`accessKeyId` needs `secretAccessKey`', ['accessKeyId']);
    if (config.secretAccessKey !== undefined && config.accessKeyId === undefined) ctx.fail('`secretAccessKey` needs `accessKeyId`', ['secretAccessKey']);
    if (config.sessionToken !== undefined && config.accessKeyId === undefined) {
      ctx.fail('`sessionToken` belongs to explicit keys: set `accessKeyId` and `secretAccessKey` too', ['sessionToken']);
    }
    if (config.serviceName === undefined) {
      // SPEC's `cloudAuthB` has no service field: a SPEC-only config must still sign, so say what it signs for.
      ctx.warn(
        '`serviceName` is not set: each request is signed for the AWS service its upstream host names (`bedrock-runtime.<region>.amazonaws.com` \u2192 `bedrock`), else for `bedrock`; set `serviceName` to sign for another service',
      );
    }
    // The signing libraries load only when a config uses this variant (trimmed distributions never load them).
    const { createAwsAuth } = await import('./aws.ts');
    return createAwsAuth(config, ctx.logger, ctx.resources, ctx.spans);
  },
});
