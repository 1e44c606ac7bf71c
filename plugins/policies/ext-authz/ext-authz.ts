import { CEL_NOT_SET_BEFORE_BACKEND, jsonErrorReply, parseDuration } from 'switchyard/sdk';
import type { CompileContext, Exchange, PolicyInstance, Reply } from 'switchyard/sdk';
import { cachedClient, resolveServiceTarget, tracedClient } from '../../lib/envoy-grpc/envoy-grpc.ts';
import type { ServiceTargetConfig } from '../../lib/envoy-grpc/envoy-grpc.ts';
import { grpcCheck } from './grpc-check.ts';
import { httpCheck } from './http-check.ts';

type FailureMode = 'deny' | 'allow' | { denyWithStatus: number };

export interface ExtAuthzConfig extends ServiceTargetConfig {
  protocol?: { grpc?: { context?: Record<string, string> }; http?: { path?: string; includeResponseHeaders?: string[] } };
  includeRequestHeaders?: string[];
  timeout?: string;
  failureMode?: FailureMode;
}

/** BEHAVIOUR.md §8.3: policy callouts to extAuthz wait 2s by default. */
const DEFAULT_TIMEOUT_MS = 2000;

/**
 * Compile one `extAuthz` policy: an HTTP check, or an Envoy ext_authz gRPC client, against the `host`, `service` or
 * `backend` address, with the TLS and headers of its `policies`.
 */
export async function compileExtAuthz(config: ExtAuthzConfig, ctx: CompileContext): Promise<PolicyInstance> {
  const timeoutMs = config.timeout === undefined ? DEFAULT_TIMEOUT_MS : parseDuration(config.timeout)!;
  if (timeoutMs <= 0) ctx.fail('`timeout` must be greater than zero', ['timeout']);
  const mode = config.failureMode ?? 'deny';
  const http = config.protocol?.http;
  if (!http && config.includeRequestHeaders) ctx.warn('`includeRequestHeaders` only applies to `protocol.http`; gRPC mode sends every header', ['includeRequestHeaders']);

  let check: (ex: Exchange) => Promise<Reply | undefined>;
  if (http) {
    const service = await resolveServiceTarget(config, ctx, { what: 'authorization service', grpc: false });
    const options = {
      // A named backend keeps its own pool unless `policies.backendTLS` asks for other TLS settings.
      target: service.connection.target,
      headers: service.headers,
      path: http.path === undefined ? undefined : ctx.expr.compile(http.path, ['protocol', 'http', 'path'], CEL_NOT_SET_BEFORE_BACKEND),
      includeRequestHeaders: (config.includeRequestHeaders ?? []).map((h) => h.toLowerCase()),
      includeResponseHeaders: (http.includeResponseHeaders ?? []).map((h) => h.toLowerCase()),
      timeoutMs,
    };
    check = (ex) => httpCheck(options, ex);
  } else {
    const target = await resolveServiceTarget(config, ctx, { what: 'authorization service', grpc: true });
    const client = tracedClient(cachedClient(ctx.resources, 'Authorization', target), ctx.spans, 'Authorization', target);
    const context = config.protocol?.grpc?.context ?? {};
    check = (ex) => grpcCheck(client, ex, context, timeoutMs);
  }

  const logger = ctx.logger;
  const onFailure = (ex: Exchange, err: unknown): Reply | undefined => {
    ex.logField('extAuthz', 'error');
    logger.warn('external authorization failed', { error: (err as Error)?.message ?? String(err), failureMode: typeof mode === 'string' ? mode : 'denyWithStatus' });
    if (mode === 'allow') return undefined;
    return jsonErrorReply(mode === 'deny' ? 403 : mode.denyWithStatus, 'forbidden', 'external authorization failed');
  };
  return {
    async onRequest(ex) {
      let reply: Reply | undefined;
      try {
        reply = await check(ex);
      } catch (err) {
        return onFailure(ex, err);
      }
      if (reply) ex.logField('extAuthz', 'denied');
      return reply;
    },
  };
}
