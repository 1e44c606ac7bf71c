import type { IncomingHttpHeaders } from 'node:http';
import type { Readable } from 'node:stream';
import type { Dispatcher } from 'undici';
import { ErrorCode } from '../sdk/index.ts';
import type { UpstreamCallOptions, UpstreamResponse } from '../sdk/index.ts';
import { UpstreamFailure, upstreamFailure } from './upstream-errors.ts';
import { poolRequest } from './undici-core.ts';
import type { PooledTarget } from './pooled-target.ts';

/** `UpstreamTarget.request`: a call a plugin makes itself (its own headers, body, deadlines and signal). */
export async function upstreamCall(target: PooledTarget, options: UpstreamCallOptions): Promise<UpstreamResponse> {
  const headers = { ...(options.headers ?? {}) } as Record<string, string>;
  if (!Object.keys(headers).some((k) => k.toLowerCase() === 'host')) headers.host = target.parsed.authority;
  if (options.onAttempt) {
    const body = typeof options.body === 'string' ? Buffer.from(options.body) : options.body instanceof Uint8Array ? Buffer.from(options.body.buffer, options.body.byteOffset, options.body.byteLength) : undefined;
    await options.onAttempt({ method: options.method, path: options.path, origin: target.origin, headers, body, attempt: 0 });
  }
  const tracing = target.traces?.tracing ?? null;
  const span = tracing === null ? undefined : tracing.client(options.method, target.parsed, options.path, headers, options.what === undefined ? undefined : { 'switchyard.upstream.purpose': options.what });
  const signals: AbortSignal[] = [];
  if (options.signal) signals.push(options.signal);
  if (options.timeoutMs) signals.push(AbortSignal.timeout(options.timeoutMs));
  try {
    const response = await poolRequest(target.pool, {
      path: options.path,
      method: options.method as Dispatcher.HttpMethod,
      headers,
      body: (options.body ?? null) as string | Buffer | Readable | null,
      signal: signals.length === 0 ? undefined : signals.length === 1 ? signals[0] : AbortSignal.any(signals),
      headersTimeout: options.headersTimeoutMs ?? 0,
      bodyTimeout: options.idleTimeoutMs ?? 0,
    });
    if (span !== undefined) tracing!.endClient(span, response.statusCode);
    return { status: response.statusCode, headers: response.headers as IncomingHttpHeaders, body: response.body };
  } catch (err) {
    if (span !== undefined) tracing!.endClient(span, undefined, err);
    if ((err as Error)?.name === 'TimeoutError') {
      throw new UpstreamFailure(504, 'upstream_timeout', 'upstream timed out', ErrorCode.upstreamTimeout, `upstream ${target.origin} timed out`);
    }
    throw upstreamFailure(err, target.origin);
  }
}
