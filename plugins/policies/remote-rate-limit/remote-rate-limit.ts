import { CEL_NOT_SET_HERE, celLlmBeforeCall, parseDuration } from 'switchyard/sdk';
import type { CompileContext, PolicyInstance } from 'switchyard/sdk';
import { cachedClient, resolveServiceTarget, tracedClient } from '../../lib/envoy-grpc/envoy-grpc.ts';
import type { ServiceTargetConfig } from '../../lib/envoy-grpc/envoy-grpc.ts';
import { checkLimits } from './check.ts';
import { FailureLog } from './failure-log.ts';
import type { RlsCaller } from './check.ts';
import { remoteTokenLimits } from './llm-tokens.ts';
import type { RequestCheck } from './llm-tokens.ts';
import { buildDescriptors } from './rls.ts';
import type { CompiledDescriptor } from './rls.ts';

export interface RemoteRateLimitConfig extends ServiceTargetConfig {
  domain: string;
  descriptors?: { entries: { key: string; value: string }[]; type?: 'requests' | 'tokens' }[];
  failureMode?: 'failClosed' | 'failOpen' | 'FailClosed' | 'FailOpen';
  timeout?: string;
}

const DEFAULT_TIMEOUT_MS = 1000;

// Names that would fail on every request, refused at load (ADR 0173): the limiter is never handed the body, and
// request descriptors are evaluated before the backend has read it.
const NO_BODY = 'in rate limit descriptors: they are not handed the request body (`llmRequest` exists only in `ai` expressions); use `llm.requestModel` or `llm.promptTokens` in a `type: tokens` descriptor';
// Token descriptors see the call about to be made (llm-tokens.ts): what the backend sets once it made it never is.
const TOKEN_UNAVAILABLE = { ...CEL_NOT_SET_HERE, llmRequest: NO_BODY, ...celLlmBeforeCall('in `type: tokens` descriptors', ['provider', 'requestModel', 'promptTokens']) };
const REQUEST_UNAVAILABLE = {
  ...CEL_NOT_SET_HERE,
  llmRequest: NO_BODY,
  llm: 'in `type: requests` descriptors: they are evaluated before the backend reads the body; read `llm.*` in a `type: tokens` descriptor',
};

/**
 * Compile one `remoteRateLimit` policy: the descriptors' CEL values and a cached RLS gRPC client for the `host`,
 * `service` or `backend` address, with the TLS and call metadata of its `policies`.
 */
export async function compileRemoteRateLimit(config: RemoteRateLimitConfig, ctx: CompileContext): Promise<PolicyInstance> {
  const timeoutMs = config.timeout === undefined ? DEFAULT_TIMEOUT_MS : parseDuration(config.timeout)!;
  if (timeoutMs <= 0) ctx.fail('`timeout` must be greater than zero', ['timeout']);
  const failOpen = (config.failureMode ?? 'failClosed').toLowerCase() === 'failopen';
  const descriptors: CompiledDescriptor[] = [];
  const tokenDescriptors: CompiledDescriptor[] = [];
  let firstTokens = -1;
  (config.descriptors ?? []).forEach((d, i) => {
    const requests = (d.type ?? 'requests') === 'requests';
    const unavailable = requests ? REQUEST_UNAVAILABLE : TOKEN_UNAVAILABLE;
    const entries = d.entries.map((e, j) => ({ key: e.key, value: ctx.expr.compile(e.value, ['descriptors', i, 'entries', j, 'value'], unavailable) }));
    // Token descriptors are checked once the LLM backend knows the prompt estimate (llm-tokens.ts), not here.
    if (requests) descriptors.push({ entries });
    else {
      if (firstTokens === -1) firstTokens = i;
      tokenDescriptors.push({ entries });
    }
  });
  const target = await resolveServiceTarget(config, ctx, { what: 'rate limit service', grpc: true });
  const client = tracedClient(cachedClient(ctx.resources, 'RateLimitService', target), ctx.spans, 'RateLimitService', target);
  if (descriptors.length === 0 && tokenDescriptors.length === 0) return {};
  const service: RlsCaller = { client, domain: config.domain, timeoutMs, failOpen, failures: new FailureLog(ctx.logger) };
  const requests: RequestCheck | undefined = descriptors.length
    ? (ex, hold) => {
        const list = buildDescriptors(descriptors, ex);
        if (list.length === 0) return undefined;
        // hits_addend 0: the service's default, one hit per request.
        return checkLimits(service, ex, list, 0, hold);
      }
    : undefined;
  if (tokenDescriptors.length === 0) return { onRequest: requests && ((ex) => requests(ex)) };
  return remoteTokenLimits(service, tokenDescriptors, requests, [...ctx.path, 'descriptors', firstTokens, 'type']);
}
