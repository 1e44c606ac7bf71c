import type { BackendCompileContext, BackendInstance, Exchange, Reply, UpstreamAttempt } from 'switchyard/sdk';
import { backendAuthFailure, bufferBodyForSigning } from '../../lib/backend-auth/contract.ts';
import type { BackendAuthInstance } from '../../lib/backend-auth/contract.ts';
import { backendAuthSlot } from '../../lib/slots/backend-auth.ts';

export interface AgentRuntimeConfig {
  agentRuntimeArn: string;
  qualifier?: string;
}

/** `arn:<partition>:bedrock-agentcore:<region>:<12-digit account>:runtime/<id>` (BEHAVIOUR.md §2.5). */
const RUNTIME_ARN = /^arn:(aws[a-z-]*):bedrock-agentcore:([a-z]{2}(?:-[a-z]+)+-\d+):(\d{12}):runtime\/[A-Za-z0-9._-]+$/;

/** The SigV4 signing name of AgentCore. */
const SIGNING_SERVICE = 'bedrock-agentcore';

/** The endpoint origin: the AWS SDKs' endpoint override variables first, then the region's public endpoint. */
function endpointOrigin(region: string, partition: string): string {
  const override = process.env.AWS_ENDPOINT_URL_BEDROCK_AGENTCORE || process.env.AWS_ENDPOINT_URL;
  if (override) return new URL(override).origin;
  const suffix = partition === 'aws-cn' ? 'amazonaws.com.cn' : 'amazonaws.com';
  return `https://bedrock-agentcore.${region}.${suffix}`;
}

/**
 * An AgentCore runtime backend: each request goes to `/runtimes/<url-encoded ARN>/invocations[?qualifier=q]` on the
 * runtime's regional endpoint (the client's path and query are replaced), SigV4-signed for `bedrock-agentcore`.
 * A `backendAuth` policy on the route or backend signs instead of the implicit credential chain.
 */
export async function compileAgentRuntime(config: AgentRuntimeConfig, field: string, ctx: BackendCompileContext): Promise<BackendInstance> {
  const arn = RUNTIME_ARN.exec(config.agentRuntimeArn.trim());
  if (!arn) {
    return ctx.fail(
      `\`${config.agentRuntimeArn}\` is not an AgentCore runtime ARN: expected \`arn:aws:bedrock-agentcore:<region>:<12-digit account>:runtime/<id>\``,
      [field, 'agentRuntimeArn'],
    );
  }
  const [, partition, region] = arn as unknown as [string, string, string];
  const origin = endpointOrigin(region, partition);
  const upstream = ctx.http.target({ origin, tls: origin.startsWith('https:') ? ctx.policies.facets.tls : undefined, http2: ctx.policies.facets.http2, authority: 'target' });
  const path = `/runtimes/${encodeURIComponent(config.agentRuntimeArn.trim())}/invocations`;
  const query = config.qualifier ? `?qualifier=${encodeURIComponent(config.qualifier)}` : '';

  // The implicit signer: the `aws` backendAuth variant with the default chain, scoped to this runtime's region.
  let signer: BackendAuthInstance | undefined;
  if (!ctx.policies.has('backendAuth')) {
    ({ instance: signer } = await ctx.compileVariant(backendAuthSlot, { aws: { serviceName: SIGNING_SERVICE, region } }, [field]));
  }

  const send = (ex: Exchange): Promise<Reply> => {
    ex.path = path;
    ex.query = query;
    if (!signer) return upstream.forward(ex);
    const own = signer;
    return upstream.forward(ex, async (attempt: UpstreamAttempt) => {
      try {
        await own.apply(ex, attempt);
      } catch (err) {
        throw backendAuthFailure(err);
      }
    });
  };
  return {
    protocol: 'http',
    target: upstream,
    handle: (ex) => {
      const reading = signer ? bufferBodyForSigning(ex) : undefined;
      return reading ? reading.then(() => send(ex)) : send(ex);
    },
  };
}
