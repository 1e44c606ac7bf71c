import { jsonErrorReply, relayedErrorReply } from 'switchyard/sdk';
import type { Exchange, HeaderMap, Reply } from 'switchyard/sdk';
import { serviceHeader, unaryCall } from '../../lib/envoy-grpc/envoy-grpc.ts';
import type { EnvoyClient } from '../../lib/envoy-grpc/envoy-grpc.ts';
import { Code, derivedHeaders } from './rls.ts';
import type { DescriptorMessage, RateLimitResponse } from './rls.ts';
import type { FailureLog } from './failure-log.ts';

/** One rate limit service as a policy calls it. */
export interface RlsCaller {
  readonly client: EnvoyClient;
  readonly domain: string;
  readonly timeoutMs: number;
  readonly failOpen: boolean;
  /** Warnings of failed calls, throttled. */
  readonly failures: FailureLog;
}

/**
 * One `ShouldRateLimit` call for `list`, each descriptor counting `hitsAddend` (0: the service's default of one;
 * a descriptor's own `hits_addend` takes its place, ADR 0173):
 * a 429 or 500 reply when the request must stop, else undefined, with the service's headers applied and
 * `x-ratelimit-*` derived from its statuses. The response headers of an allowed call are queued, or put in `hold`
 * when a later call may still refuse (queued headers are applied last: they would replace its 429's).
 */
export async function checkLimits(rls: RlsCaller, ex: Exchange, list: DescriptorMessage[], hitsAddend: number, hold?: [string, string][]): Promise<Reply | undefined> {
  let res: RateLimitResponse;
  try {
    res = await unaryCall<RateLimitResponse>(rls.client, 'ShouldRateLimit', { domain: rls.domain, descriptors: list, hits_addend: hitsAddend }, rls.timeoutMs, ex.signal);
    if (res.overall_code !== Code.OK && res.overall_code !== Code.OVER_LIMIT) throw new Error(`unexpected overall_code ${res.overall_code}`);
  } catch (err) {
    ex.logField('rateLimit', 'error');
    rls.failures.failed('rate limit service failed', { error: (err as Error)?.message ?? String(err), failureMode: rls.failOpen ? 'failOpen' : 'failClosed' });
    return rls.failOpen ? undefined : jsonErrorReply(500, 'rate_limit_error', 'rate limit failed');
  }
  const sent = new Set<string>();
  const overLimit = res.overall_code === Code.OVER_LIMIT;
  if (overLimit) {
    ex.logField('rateLimit', 'over_limit');
    const headers: HeaderMap = {};
    for (const h of res.response_headers_to_add) {
      const header = serviceHeader(h);
      if (header === undefined) continue;
      sent.add(header[0]);
      headers[header[0]] = header[1];
    }
    for (const [name, value] of derivedHeaders(res, true, sent)) headers[name] = value;
    if (res.raw_body && res.raw_body.length > 0) return relayedErrorReply(429, Buffer.from(res.raw_body), headers, 'rate_limited', 'rate limit exceeded');
    return jsonErrorReply(429, 'rate_limited', 'rate limit exceeded', headers);
  }
  for (const h of res.request_headers_to_add) {
    const header = serviceHeader(h);
    if (header !== undefined) ex.headers[header[0]] = header[1];
  }
  const out: [string, string][] = [];
  for (const h of res.response_headers_to_add) {
    const header = serviceHeader(h);
    if (header === undefined) continue;
    sent.add(header[0]);
    out.push(header);
  }
  out.push(...derivedHeaders(res, false, sent));
  if (hold) hold.push(...out);
  else for (const [name, value] of out) ex.queueResponseHeader(name, value);
  return undefined;
}
