import { jsonErrorReply, parseDuration, relayedErrorReply } from 'switchyard/sdk';
import type { CompileContext, HeaderMap, PolicyInstance } from 'switchyard/sdk';
import { cachedClient, resolveServiceTarget, unaryCall } from '../../lib/envoy-grpc/envoy-grpc.ts';
import type { ServiceTargetConfig } from '../../lib/envoy-grpc/envoy-grpc.ts';
import { buildDescriptors, Code, derivedHeaders, headerValue } from './rls.ts';
import type { CompiledDescriptor, RateLimitResponse } from './rls.ts';

export interface RemoteRateLimitConfig extends ServiceTargetConfig {
  domain: string;
  descriptors?: { entries: { key: string; value: string }[]; type?: 'requests' | 'tokens' }[];
  failureMode?: 'failClosed' | 'failOpen' | 'FailClosed' | 'FailOpen';
  timeout?: string;
}

const DEFAULT_TIMEOUT_MS = 1000;

/**
 * Compile one `remoteRateLimit` policy: the descriptors' CEL values and a cached RLS gRPC client for the `host`,
 * `service` or `backend` address, with the TLS and call metadata of its `policies`.
 */
export async function compileRemoteRateLimit(config: RemoteRateLimitConfig, ctx: CompileContext): Promise<PolicyInstance> {
  const timeoutMs = config.timeout === undefined ? DEFAULT_TIMEOUT_MS : parseDuration(config.timeout)!;
  if (timeoutMs <= 0) ctx.fail('`timeout` must be greater than zero', ['timeout']);
  const failOpen = (config.failureMode ?? 'failClosed').toLowerCase() === 'failopen';
  const descriptors: CompiledDescriptor[] = [];
  (config.descriptors ?? []).forEach((d, i) => {
    const entries = d.entries.map((e, j) => ({ key: e.key, value: ctx.expr.compile(e.value, ['descriptors', i, 'entries', j, 'value']) }));
    // Token descriptors count LLM usage; on other routes they do not limit requests.
    if ((d.type ?? 'requests') === 'requests') descriptors.push({ entries });
  });
  const target = await resolveServiceTarget(config, ctx, { what: 'rate limit service', grpc: true });
  const client = cachedClient(ctx.resources, 'RateLimitService', target);
  if (descriptors.length === 0) return {};
  const domain = config.domain;
  const logger = ctx.logger;

  return {
    async onRequest(ex) {
      const list = buildDescriptors(descriptors, ex);
      if (list.length === 0) return undefined;
      let res: RateLimitResponse;
      try {
        res = await unaryCall<RateLimitResponse>(client, 'ShouldRateLimit', { domain, descriptors: list, hits_addend: 0 }, timeoutMs, ex.signal);
        if (res.overall_code !== Code.OK && res.overall_code !== Code.OVER_LIMIT) throw new Error(`unexpected overall_code ${res.overall_code}`);
      } catch (err) {
        ex.logField('rateLimit', 'error');
        logger.warn('rate limit service failed', { error: (err as Error)?.message ?? String(err), failureMode: failOpen ? 'failOpen' : 'failClosed' });
        return failOpen ? undefined : jsonErrorReply(500, 'rate_limit_error', 'rate limit failed');
      }
      const sent = new Set<string>();
      const overLimit = res.overall_code === Code.OVER_LIMIT;
      if (overLimit) {
        ex.logField('rateLimit', 'over_limit');
        const headers: HeaderMap = {};
        for (const h of res.response_headers_to_add) {
          const name = h.key.toLowerCase();
          sent.add(name);
          headers[name] = headerValue(h);
        }
        for (const [name, value] of derivedHeaders(res, true, sent)) headers[name] = value;
        if (res.raw_body && res.raw_body.length > 0) return relayedErrorReply(429, Buffer.from(res.raw_body), headers, 'rate_limited', 'rate limit exceeded');
        return jsonErrorReply(429, 'rate_limited', 'rate limit exceeded', headers);
      }
      for (const h of res.request_headers_to_add) {
        const name = h.key.toLowerCase();
        if (name !== 'host' && !name.startsWith(':')) ex.headers[name] = headerValue(h);
      }
      for (const h of res.response_headers_to_add) {
        const name = h.key.toLowerCase();
        sent.add(name);
        ex.queueResponseHeader(name, headerValue(h));
      }
      for (const [name, value] of derivedHeaders(res, false, sent)) ex.queueResponseHeader(name, value);
      return undefined;
    },
  };
}
